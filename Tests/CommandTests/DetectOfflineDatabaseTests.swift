import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Testing

/// `enctl detect offline --db` only reads the database: whatever its schema version, wherever it
/// lies and whoever may write it, every file and folder is as it was, modes included.
@Suite struct DetectOfflineDatabaseTests {
    let directory = TemporaryDirectory()
    let signer: P256PrivateKey
    let exposed: DiagnosisKey
    let start = ENIntervalNumber(2_900_016)

    init() throws {
        signer = try P256PrivateKey()
        exposed = DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: start))
        // Readable by nobody, for the read-only case.
        chmod(directory.path, 0o755)
        try FileManager.default.createDirectory(atPath: directory.file("inputs"), withIntermediateDirectories: false)
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
            .zip(keys: [exposed]).write(to: URL(fileURLWithPath: directory.file("inputs/keys.zip")))
        try signer.publicKey.pem.write(toFile: directory.file("inputs/authority.pem"), atomically: true, encoding: .utf8)
        for file in ["inputs", "inputs/keys.zip", "inputs/authority.pem"] { chmod(directory.file(file), file == "inputs" ? 0o755 : 0o444) }
    }

    /// A database of today's schema in `folder`, with five sightings of the exposed key.
    func database(in folder: String, mode: mode_t) throws -> String {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let path = folder + "/enagent.db"
        let store = try AgentStore(path: path)
        try store.record(try (0..<5).map { try Broadcaster(key: exposed).sighting(at: start.unixSeconds + 3_600 + Int64($0) * 60, rssi: -70) })
        try store.close()
        chmod(folder, mode)
        return path
    }

    /// Each entry of `folder` (and the folder itself) with its mode, owner and contents.
    func snapshot(_ folder: String) throws -> [String] {
        var status = stat()
        let entries = try [""] + FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { "/" + $0 }
        return try entries.map { entry in
            #expect(lstat(folder + entry, &status) == 0)
            let contents = entry.isEmpty ? Data() : try Data(contentsOf: URL(fileURLWithPath: folder + entry))
            return "\(entry) \(String(status.st_mode, radix: 8)) \(status.st_uid) \(contents.count) \(contents.hashValue)"
        }
    }

    func detect(_ database: String, asNobody: Bool = false) throws -> Command.Result {
        let arguments = ["detect", "offline", "--db", database, "--keys", directory.file("inputs/keys.zip"),
                         "--public-key", directory.file("inputs/authority.pem"), "--now", "\(start.unixSeconds + 2 * 86_400)"]
        guard asNobody else { return try Command.enctl(arguments) }
        return try Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Command.executable("enctl").path] + arguments)
    }

    @Test func aReadOnlyCopyIsReadAndLeftAsItWas() throws {
        let path = try database(in: directory.file("read-only"), mode: 0o755)
        chmod(path, 0o444)
        let before = try snapshot(directory.file("read-only"))
        let result = try detect(path, asNobody: true)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("against 5 sightings") && result.standardOutput.contains("1 key matched"), "\(result.standardOutput)")
        #expect(try snapshot(directory.file("read-only")) == before)
    }

    @Test func aDatabaseInAWorldWritableFolderIsReadAndLeftAsItWas() throws {
        for mode: mode_t in [0o777, 0o1777] {
            let folder = directory.file("shared-\(String(mode, radix: 8))")
            let path = try database(in: folder, mode: mode)
            chmod(path, 0o644)
            let before = try snapshot(folder)
            let result = try detect(path)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.standardOutput.contains("1 key matched"), "\(result.standardOutput)")
            #expect(try snapshot(folder) == before, "mode \(String(mode, radix: 8))")
        }
    }

    /// The oldest schema the project shipped (the GRDB store's v4) is read as it is: not migrated.
    @Test func anOlderSchemaIsReadWithoutMigrating() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ENStoreTests/Fixtures/agent-v4.db").path
        let folder = directory.file("v4")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        chmod(folder, 0o755)
        try FileManager.default.copyItem(atPath: fixture, toPath: folder + "/enagent.db")
        chmod(folder + "/enagent.db", 0o644)
        let before = try snapshot(folder)
        let result = try detect(folder + "/enagent.db")
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("against 300 sightings"), "\(result.standardOutput)")
        #expect(try snapshot(folder) == before, "the fixture was changed")
    }

    /// A database the agent has open: what is still in its write-ahead log is read too.
    @Test func aDatabaseInUseIsReadWithItsLog() throws {
        let folder = directory.file("live")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        chmod(folder, 0o700)
        let store = try AgentStore(path: folder + "/enagent.db")
        try store.record(try (0..<5).map { try Broadcaster(key: exposed).sighting(at: start.unixSeconds + 3_600 + Int64($0) * 60, rssi: -70) })
        #expect(FileManager.default.fileExists(atPath: folder + "/enagent.db-wal"))
        let result = try detect(folder + "/enagent.db")
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("against 5 sightings") && result.standardOutput.contains("1 key matched"), "\(result.standardOutput)")
        try store.close()
    }

    /// The database's index of its sightings (schema v10), a stale one (read through a pass over
    /// the rows, since a reader cannot rebuild it) and a version 9 database without one give the
    /// same detection, to every scan and attenuation: whether each scan's receptions of the
    /// device are one sighting (schema v12) or one each (version 9 stored every reception alone).
    @Test func theIndexAStaleOneAndAVersion9DatabaseDetectTheSame() throws {
        let folder = directory.file("versions")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        chmod(folder, 0o755)
        let device = try Broadcaster(key: exposed)
        let noise = (0..<300).map { seed in
            Sighting(rpi: Bytes16(high: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15, low: UInt64(seed)), aem: AssociatedEncryptedMetadata(rawValue: 0),
                     rssi: -80, time: start.unixSeconds + Int64(seed) * 20, adapter: "hci0")
        }
        let scans = (0..<4).map { scan in start.unixSeconds + 7_200 + Int64(scan) * 150 }
        let heard = try scans.enumerated().map { scan, began in
            try (0..<3).map { try device.sighting(at: began + Int64($0), rssi: Int8(-60 - scan * 3 - $0)) }
        }
        // A database of the sightings, each scan's receptions of the device merged, or each reception a sighting of its own.
        func database(_ name: String, merged: Bool) throws {
            let store = try AgentStore(path: folder + "/\(name).db")
            try store.record(noise, scans: [start.unixSeconds...(start.unixSeconds + 6_000)])
            for (began, receptions) in zip(scans, heard) {
                var sightings = MergedSightings()
                for reception in receptions where !(merged && sightings.merge(reception)) { sightings.start(reception) }
                try store.record(sightings, scans: [began...(began + 5)])
            }
            try store.close()
        }
        try database("current", merged: true)
        try database("unmerged", merged: false)
        for (name, source, script) in [("stale", "current", "DELETE FROM sighting_batch WHERE first_id > 1"),
                                       ("v9", "unmerged", "DROP TABLE sighting_batch; CREATE INDEX sighting_by_rpi ON sighting(rpi); "
                                           + "ALTER TABLE sighting DROP COLUMN later_receptions; PRAGMA user_version = 9")] {
            try FileManager.default.copyItem(atPath: folder + "/\(source).db", toPath: folder + "/\(name).db")
            #expect(try Command.run("/usr/bin/sqlite3", [folder + "/\(name).db", script]).status == 0)
        }
        let reports = try ["current", "stale", "v9"].map { name in
            let result = try Command.enctl(["detect", "offline", "--db", folder + "/\(name).db", "--keys", directory.file("inputs/keys.zip"),
                                            "--public-key", directory.file("inputs/authority.pem"), "--now", "\(start.unixSeconds + 2 * 86_400)", "--json"])
            #expect(result.status == 0, "\(name): \(result.standardError)")
            return result.standardOutput
        }
        #expect(reports[0].contains("\"matchedKeyCount\" : 1") && reports[0].contains("\"sightingCount\" : 304"), "\(reports[0])")
        #expect(reports[1] == reports[0])
        #expect(reports[2].contains("\"sightingCount\" : 312"), "a sighting a reception: \(reports[2])")
        #expect(reports[2].replacingOccurrences(of: "\"sightingCount\" : 312", with: "\"sightingCount\" : 304") == reports[0])
    }

    @Test func aNewerSchemaIsRefusedByName() throws {
        let path = try database(in: directory.file("newer"), mode: 0o700)
        #expect(try Command.run("/usr/bin/sqlite3", [path, "PRAGMA user_version = 99"]).status == 0)
        let result = try detect(path)
        #expect(result.status == 1)
        #expect(result.standardError.contains(path), "\(result.standardError)")
    }
}
