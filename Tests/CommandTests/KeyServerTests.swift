import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Testing

/// `enctl detect server` against the export bucket as Google's key server writes it (Servers/key_server.py).
@Suite struct KeyServerTests {
    let directory = TemporaryDirectory()

    @Test func downloadsOnlyWhatIsNewResumesAfterAFailureAndFindsTheExposure() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer, as: "228_v1.pem")

        let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue
        let met = try Broadcaster(start: today - 3 * 144)
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.record(try (0..<6).map { try met.sighting(at: met.start + 3_600 + Int64($0) * 60, rssi: -65) })

        // Google's export layout (Servers/key_server.py): the index lists every archive of
        // exposureKeyExport-CH; the third is listed before the storage serves it.
        let root = directory.file("bucket")
        let folder = root + "/exposureKeyExport-CH"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let names = (0..<3).map { "\(1_600_000_000 + $0 * 3_600)-\(1_600_003_600 + $0 * 3_600)-00001.zip" }
        func publish(_ name: String, _ keys: [DiagnosisKey], keyId: String = "228") throws {
            let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: keyId, keyVersion: "v1")))
            try writer.zip(keys: keys).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try publish(names[0], [met.key, try Broadcaster(start: today - 3 * 144).key])
        try publish(names[1], [try Broadcaster(start: today - 2 * 144).key])
        try FileManager.default.createSymbolicLink(atPath: folder + "/" + names[2], withDestinationPath: directory.file("not-yet"))
        let authority = try DiagnosisTests.HealthAuthority(log: directory.file("authority.jsonl"), "--bucket", root)
        let configuration = directory.file("key-server.conf")
        try "url = \(authority.base)\nindex = exposureKeyExport-CH/index.txt\nregion = CH\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let cache = directory.file("cache")
        let detect = { try service.enctl("detect", "server", "--server-config", configuration, "--cache-dir", cache, "--state-dir", directory.file("state-detect"), "--json") }

        let failed = try detect()
        #expect(failed.status == 1)
        #expect(failed.standardError.contains("exposureKeyExport-CH/\(names[2]): the server answered HTTP 404"), "\(failed.standardError)")
        #expect(FileManager.default.fileExists(atPath: cache + "/files/exposureKeyExport-CH_\(names[0])"), "what was downloaded is kept")

        try publish("not-yet", [try Broadcaster(start: today - 144).key])
        try FileManager.default.moveItem(atPath: folder + "/not-yet", toPath: directory.file("not-yet"))
        let done = try detect()
        #expect(done.status == 0, "\(done.standardError)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(done.standardOutput.utf8)) as? [String: Int])
        #expect(summary["KeyFilesProcessed"] == 3 && summary["MatchedKeys"] == 1 && summary["NewExposureWindows"] == 1)

        let nothingNew = try detect()
        #expect(nothingNew.status == 0 && nothingNew.standardOutput.contains("\"KeyFilesProcessed\" : 0"))
        // Cleaning the cache forgets the downloads, not which files enagentd has had.
        try FileManager.default.removeItem(atPath: cache)
        let cleaned = try detect()
        #expect(cleaned.status == 0 && cleaned.standardOutput.contains("\"KeyFilesProcessed\" : 0"), "\(cleaned.standardOutput)")
        // The list an older enctl kept in the cache moves to the state directory.
        let list = directory.file("state-detect/processed")
        try FileManager.default.moveItem(atPath: list, toPath: cache + "/processed")
        let adopted = try detect()
        #expect(adopted.status == 0 && adopted.standardOutput.contains("\"KeyFilesProcessed\" : 0"), "\(adopted.standardOutput)")
        #expect(FileManager.default.fileExists(atPath: list) && !FileManager.default.fileExists(atPath: cache + "/processed"))
        let requests = authority.server.stop()
        #expect(requests.components(separatedBy: "GET /exposureKeyExport-CH/\(names[0])").count - 1 == 1, "each file is downloaded once: \(requests)")
        #expect(requests.components(separatedBy: "GET /exposureKeyExport-CH/\(names[2])").count - 1 == 2, "the missing one was asked for again")
        #expect(requests.components(separatedBy: "GET /exposureKeyExport-CH/index.txt").count - 1 == 5)

        let windows = try service.enctl("windows", "--json")
        let day = Date(timeIntervalSince1970: TimeInterval(met.start)).formatted(.iso8601.year().month().day())
        #expect(windows.standardOutput.contains("\"date\" : \"\(day)\""))
    }

    /// The export bucket as Google's key server writes it (Servers/key_server.py: ROOT/index.txt
    /// of whole object names from the bucket's root, no newline at its end): read with url naming
    /// the bucket's root and index ROOT/index.txt, or with url naming the export folder itself.
    @Test(arguments: ["bucket", "folder"])
    func theKeyServersExportLayoutIsRead(urlNames: String) throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer, as: "228_v1.pem")
        let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue
        let met = try Broadcaster(start: today - 2 * 144)
        try AgentStore(path: service.state + "/enagent.db").record(try (0..<6).map { try met.sighting(at: met.start + 3_600 + Int64($0) * 60, rssi: -65) })
        let bucket = directory.file("bucket")
        try FileManager.default.createDirectory(atPath: bucket + "/exposureKeyExport-CH", withIntermediateDirectories: true)
        for (number, key) in [met.key, try Broadcaster(start: today - 144).key].enumerated() {
            let start = 1_600_000_000 + number * 3_600
            let writer = KeyExportWriter(region: "CH", startTimestamp: UInt64(start), endTimestamp: UInt64(start + 3_600),
                                         signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
            try writer.zip(keys: [key]).write(to: URL(fileURLWithPath: bucket + "/exposureKeyExport-CH/\(start)-\(start + 3_600)-00001.zip"))
        }
        let authority = try DiagnosisTests.HealthAuthority(log: directory.file("authority.jsonl"), "--bucket", bucket)
        let configuration = directory.file("key-server.conf")
        try (urlNames == "bucket" ? "url = \(authority.base)\nindex = exposureKeyExport-CH/index.txt\n" : "url = \(authority.base)exposureKeyExport-CH/\n")
            .appending("region = CH\n").write(toFile: configuration, atomically: true, encoding: .utf8)

        let done = try service.enctl("detect", "server", "--server-config", configuration, "--cache-dir", directory.file("cache"),
                                     "--state-dir", directory.file("state-detect"), "--json")
        #expect(done.status == 0, "\(done.standardError)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(done.standardOutput.utf8)) as? [String: Int])
        #expect(summary["KeyFilesProcessed"] == 2 && summary["MatchedKeys"] == 1, "\(summary)")
        let requests = authority.server.stop()
        #expect(requests.contains("GET /exposureKeyExport-CH/1600000000-1600003600-00001.zip"), "\(requests)")
        #expect(!requests.contains("exposureKeyExport-CH/exposureKeyExport-CH"), "the folder is not doubled")
    }

    /// key-server.conf's region refuses another region's files (nothing of them is kept), and its
    /// exposure-configuration, served from the bucket, is what the daemon detects with.
    @Test func theKeyServerNamesTheRegionAndTheExposureConfiguration() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer, as: "228_v1.pem")
        let root = directory.file("bucket")
        try FileManager.default.createDirectory(atPath: root + "/exposureKeyExport-CH", withIntermediateDirectories: true)
        func write(region: String, to path: String) throws {
            let writer = KeyExportWriter(region: region, startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
            try writer.zip(keys: [try Broadcaster().key]).write(to: URL(fileURLWithPath: root + "/exposureKeyExport-CH/" + path))
        }
        try write(region: "CH", to: "1600000000-1600003600-00001.zip")
        try #"{"minimumRiskScore":1}"#.write(toFile: root + "/config.json", atomically: true, encoding: .utf8)
        let authority = try DiagnosisTests.HealthAuthority(log: directory.file("authority.jsonl"), "--bucket", root)
        let configuration = directory.file("key-server.conf")
        try "url = \(authority.base)\nindex = exposureKeyExport-CH/index.txt\nregion = CH\nexposure-configuration = config.json\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let cache = directory.file("cache")
        let detect = { try service.enctl("detect", "server", "--server-config", configuration, "--cache-dir", cache, "--state-dir", directory.file("state-detect")) }

        #expect(try service.enctl("exposures").standardError.contains("[NotAvailable]"), "no v1 configuration before")
        let done = try detect()
        #expect(done.status == 0, "\(done.standardError)")
        #expect(try service.enctl("exposures").status == 0, "the server's configuration has v1 keys")

        try write(region: "DE", to: "1600003600-1600007200-00001.zip")  // a file of another region in the folder
        let refused = try detect()
        #expect(refused.status == 1 && refused.standardError.contains(#"1600003600-1600007200-00001.zip: the key file is for region "DE", not "CH""#),
                "\(refused.standardError)")
        #expect(!FileManager.default.fileExists(atPath: cache + "/files/exposureKeyExport-CH_1600003600-1600007200-00001.zip"))
    }

    @Test func aBadServerConfigurationNamesTheLine() throws {
        let configuration = directory.file("key-server.conf")
        try "# servers\nurl = ftp://keys.example.org/\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let badURL = try Command.enctl("detect", "server", "--server-config", configuration)
        #expect(badURL.status == 1 && badURL.standardError.contains("\(configuration):2: url must be an http or https URL"), "\(badURL.standardError)")
        try "url = https://keys.example.org/\nmirror = yes\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let unknown = try Command.enctl("detect", "server", "--server-config", configuration)
        #expect(unknown.status == 1 && unknown.standardError.contains("\(configuration):2: unknown key \"mirror\""), "\(unknown.standardError)")
    }

    @Test func aKeyTrustedForOneKeyIdDoesNotVerifyAnother() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer, as: "228_v1.pem")
        let file = directory.file("other.zip")
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "310", keyVersion: "v1")))
        try writer.zip(keys: [try Broadcaster().key]).write(to: URL(fileURLWithPath: file))
        let result = try service.enctl("detect", file)
        #expect(result.status == 1 && result.standardError.contains("the signature is unknown-key"), "\(result.standardError)")
    }
}

extension KeyServerTests {
    /// A key server that streams forever, answers a byte at a time or redirects in a loop: each
    /// download fails with an error naming the limit, within the configured time, bounded in memory.
    @Test(arguments: [("forever", "larger than 1048576 bytes", 30), ("slow", "did not finish within 3 s", 3),
                      ("loop", "more than 5 redirects", 30), ("big", "larger than 1048576 bytes", 30)])
    func aHostileKeyServerIsStoppedByName(path: String, error: String, timeout: Int) throws {
        let service = try ServiceTests.Service.enabled(in: directory, trusting: try P256PrivateKey())
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Servers/hostile_key_server.py").path
        let server = try LoopbackServer("/usr/bin/python3") { [script, String($0)] }
        let configuration = directory.file("key-server-\(path).conf")
        try "url = \(server.url)\(path)/\ntimeout = \(timeout)\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let started = Date()
        let result = try service.enctl("detect", "server", "--server-config", configuration, "--cache-dir", directory.file("cache-\(path)"), "--state-dir", directory.file("state-\(path)"),
                                       "--max-file-size", "1")
        let seconds = Date().timeIntervalSince(started)
        #expect(result.status == 1)
        #expect(result.standardError.contains(error), "\(path): \(result.standardError)")
        #expect(seconds < Double(timeout) + 7, "\(path) took \(seconds) s")
        #expect(!FileManager.default.fileExists(atPath: directory.file("cache-\(path)/files/big.zip")), "nothing partial is kept")
        #expect(!FileManager.default.fileExists(atPath: directory.file("cache-\(path)/files/big.zip.part")), "nothing partial is kept")
    }
}
