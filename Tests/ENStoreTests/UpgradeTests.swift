import ENCore
import ENSQLite
@testable import ENStore
import Foundation
import TestSupport
import Testing

/// Nothing is lost on upgrade: a database that enagent's GRDB store wrote (schema v4, its
/// `grdb_migrations` table; Fixtures/README.md says what it holds) opens in today's store with
/// every key, sighting, result, setting, consent event and upload.
@Suite struct UpgradeTests {
    let directory = TemporaryDirectory()

    func copyOfFixture() throws -> String {
        let fixture = try #require(Bundle.module.path(forResource: "agent-v4", ofType: "db", inDirectory: "Fixtures"))
        let path = directory.file("state/enagent.db")
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        return path
    }

    @Test func theGRDBStoresDatabaseKeepsEverything() throws {
        let store = try AgentStore(path: try copyOfFixture())
        #expect(try store.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.migrations.count)
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'grdb_migrations'") } == 0)

        let keys = try store.temporaryExposureKeys(validAfter: 0)
        #expect(keys.map(\.keyData) == [Bytes16(high: 0x0101_0101_0101_0101, low: 1), Bytes16(high: 0x0202_0202_0202_0202, low: 2),
                                         Bytes16(high: 0x0303_0303_0303_0303, low: 3)])
        #expect(keys.map(\.rollingStartIntervalNumber.rawValue) == [2_900_016, 2_900_016, 2_900_160])
        #expect(keys.map(\.rollingPeriod) == [41, 144, 144], "the rolled key keeps its end")
        #expect(try store.temporaryExposureKey(startingAt: ENIntervalNumber(2_900_016))?.keyData == keys[1].keyData)

        let sightings = try store.sightingRecords().flatMap(\.sightings)
        #expect(sightings.count == 300)
        #expect(sightings.filter { $0.adapter == "hci1" }.count == 100 && sightings.filter { $0.rssi == nil }.count == 6)
        #expect(sightings[7] == Sighting(rpi: Bytes16(high: 7 &* 0x9E37_79B9_7F4A_7C15, low: 7), aem: AssociatedEncryptedMetadata(rawValue: 7 &* 2_654_435_761),
                                         rssi: -37, time: 1_740_009_600 + 7 * 60, adapter: "hci0"))
        // v6: sightings from before keep their adapter's name; its address is unknown, so they
        // get the default RSSI correction.
        #expect(sightings.allSatisfy { $0.adapterAddress == nil })
        let index = try store.sightingIndex()
        #expect(index.count == 300 && index.adapterAddresses.isEmpty)

        #expect(try store.lastSuccessfulDetection() == 1_740_100_004)
        #expect(try store.lastDetection()?.error == "export-3.zip: the signature does not verify")
        #expect(try store.hasProcessedKeyFile(sha256: Array(repeating: 0x11, count: 32)) && store.hasProcessedKeyFile(sha256: Array(repeating: 0x22, count: 32)))
        let window = try #require(try store.exposureWindows().first)
        #expect(window.date == 1_740_009_600 && window.reportType == .confirmedTest && window.infectiousness == .high)
        #expect(window.diagnosisKey.key.keyData == Bytes16(high: 0xAAAA, low: 0xBBBB) && window.diagnosisKey.daysSinceOnsetOfSymptoms == 2)
        #expect(window.scanInstances == [ScanInstance(minAttenuation: 55, typicalAttenuation: 60, secondsSinceLastScan: 120),
                                         ScanInstance(minAttenuation: nil, typicalAttenuation: nil, secondsSinceLastScan: 300)])

        #expect(try store.setting("paused-until") == "1740200000" && store.setting("last-advertised-interval") == "2900100")
        #expect(try store.currentConsent() == ConsentEvent(granted: true, recordedAt: 1_740_060_000))

        let results = try store.testResults()
        #expect(results.map(\.id) == ["result-refused", "result-pending", "result-shared"])
        #expect(results[0].uploadFailure == "HTTP 400: the certificate has expired" && !results[0].uploadPending)
        #expect(results[1].uploadPending && results[1].verificationDetail == "issuer https://example.org")
        #expect(results[2].sharedAt == 1_740_020_020 && results[2].revisionToken == "rev-1" && results[2].verificationToken == "token-1")
        #expect(results[2].sharedKeys == [keys[0].keyData, keys[1].keyData])
        #expect(try store.pendingUploads() == [PendingUpload(testResultId: "result-pending", url: "http://127.0.0.1:8080/v1/publish", body: "{\"b\":2}",
                                                             attempts: 1, lastError: "HTTP 503", nextAttemptAt: 1_740_031_000)])

        // v5 rebuilt the test results with their uploads and shared keys: a result may lack a date,
        // and removing one still removes what hangs on it.
        try store.recordTestResult(TestResult(id: "undated", testDate: nil, verificationMethod: "verification-code", verificationDetail: nil, recordedAt: 1_740_300_000))
        let undated = try store.testResults().first
        #expect(undated?.id == "undated" && undated?.testDate == nil)
        try store.write { try $0.execute("DELETE FROM test_result WHERE id = 'result-pending'") }
        let uploadsLeft = try store.pendingUploads()
        #expect(uploadsLeft.isEmpty, "the pending upload went with its result")
        let dangling = try store.read { try $0.fetchAll(String.self, "PRAGMA foreign_key_check") }
        #expect(dangling.isEmpty)

        // And it goes on: a new sighting is stored, with its adapter's address, and the database opens again.
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13"))
        try store.record([Sighting(rpi: Bytes16(high: 1, low: 2), aem: AssociatedEncryptedMetadata(rawValue: 3), rssi: -50, time: 1_740_200_000, adapter: "hci0",
                                   adapterAddress: dongle)])
        try store.close()
        let reopened = try AgentStore(path: store.path)
        let count = try reopened.sightingCount()
        let newest = try reopened.sightingRecords(from: 1_740_200_000).flatMap(\.sightings)
        let reopenedIndex = try reopened.sightingIndex()
        #expect(count == 301 && newest.map(\.adapterAddress) == [dongle] && reopenedIndex.adapterAddresses == [dongle])
    }

    /// Issue 56: schema v12 keeps a scan's receptions of an identifier in one row. A version 11
    /// database, with a row per reception (a controller that reports every advertising event
    /// wrote 11 to 16 per identifier and scan), keeps its rows as sightings of one reception
    /// each, and its index of sightings as it was: a detection finds the same windows, scans and
    /// v1 exposures before the migration (read as enctl detect offline reads it), after it, and
    /// on the receptions themselves; and so after a scan recorded in one row per identifier.
    @Test func aVersion11DatabaseOfARowPerReceptionDetectsTheSameAfterTheMigration() throws {
        let path = directory.file("v11.db")
        let device = try Broadcaster(start: 2_900_016), stranger = try Broadcaster(start: 2_900_016)
        var heard = [Sighting](), scans = [ClosedRange<Int64>]()
        func scan(at began: Int64) throws -> [Sighting] {
            scans.append(began...(began + 4))
            return try (0..<14).flatMap { report in
                try [device, stranger].map { phone in
                    var sighting = try phone.sighting(at: began + Int64(report) / 3, rssi: Int8(-50 - (report * 5 + scans.count) % 13))
                    sighting.previousScanTime = scans.count > 1 ? scans[scans.count - 2].lowerBound : nil
                    return sighting
                }
            }
        }
        for number in 0..<8 { heard += try scan(at: device.start + 3_600 + Int64(number) * 120 + 57) }
        let connection = try SQLiteConnection(path: path)
        try connection.execute(script: Schema.migrations.prefix(11).joined(separator: ";\n") + "; PRAGMA user_version = 11")
        try connection.transaction(.immediate) {
            for sighting in heard {
                try connection.execute("INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, ?, 'hci0')",
                                       sighting.rpi.bytes, sighting.aem.bytes, sighting.rssi, sighting.time)
            }
            for scan in scans { try connection.execute("INSERT INTO scan (started_at, ended_at) VALUES (?, ?)", scan.lowerBound, scan.upperBound) }
            // As enagent's version 11 wrote it, with each batch.
            try SightingBatches.rebuild(in: connection)
        }
        try connection.close()

        func detected(_ index: SightingIndex) throws -> (windows: [ExposureWindow], v1: V1Match?) {
            let match = try KeyMatcher(index: index).match(device.key)
            return (match.map { ExposureWindowing.windows(for: $0, configuration: ExposureConfigurationV2()) } ?? [], match.map(V1Match.init))
        }
        let receptions = try detected(SightingIndex(heard))
        #expect(receptions.windows.flatMap(\.scanInstances).count == 8 && receptions.v1?.sightings.count == 8)
        let before = try detected(AgentDatabaseReader.sightingIndex(at: path))
        #expect(before.windows == receptions.windows && before.v1 == receptions.v1)

        let store = try AgentStore(path: path)
        #expect(try store.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.laterReceptionsVersion)
        #expect(try store.sightingCount() == heard.count, "a row per reception, as it was")
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sighting WHERE later_receptions IS NOT NULL") } == 0)
        #expect(try store.read { try SightingBatches.isConsistent(in: $0) }, "the index of sightings holds as it was")
        let after = try detected(store.detectionIndex())
        #expect(after.windows == receptions.windows && after.v1 == receptions.v1)

        let next = try scan(at: scans.last!.lowerBound + 120)
        try store.record(next, scans: [scans.last!])
        #expect(try store.sightingCount() == heard.count + 2, "a row per identifier")
        let all = try detected(SightingIndex(heard + next))
        #expect(all.windows.flatMap(\.scanInstances).count == 9)
        #expect(try detected(store.detectionIndex()).windows == all.windows && detected(store.sightingIndex()).v1 == all.v1)
    }

    @Test func aGRDBDatabaseOfANewerReleaseIsRefused() throws {
        let path = try copyOfFixture()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("INSERT INTO grdb_migrations VALUES ('v5-from-the-future')")
        try connection.close()
        expectError({ _ = try AgentStore(path: path) }) { error in
            guard case StoreError.newerSchema = error else { return false }
            return true
        }
    }

    /// A process killed while a migration runs leaves the files as they were on disk at that
    /// moment: the migration's pages in the write-ahead log, uncommitted. The database opens at
    /// the version before and migrates again.
    @Test func aMigrationKilledHalfWayLeavesADatabaseThatOpens() throws {
        let path = directory.file("v1.db")
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute(script: "PRAGMA journal_mode = WAL; \(Schema.migrations[0]); PRAGMA user_version = 1")
            try connection.execute("INSERT INTO test_result (id, test_date, verification_method, recorded_at) VALUES ('r1', 86400, 'verification-code', 90000)")
            try connection.close()
        }
        let migrating = try SQLiteConnection(path: path)
        // A one-page cache writes the migration's pages to the log before it commits.
        try migrating.execute(script: "PRAGMA cache_size = 1; BEGIN IMMEDIATE; \(Schema.migrations[1]); \(Schema.migrations[2]); PRAGMA user_version = 3")
        let killed = directory.file("killed")
        try FileManager.default.createDirectory(atPath: killed, withIntermediateDirectories: false)
        for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: path + suffix, toPath: killed + "/enagent.db" + suffix) }
        #expect(try FileManager.default.attributesOfItem(atPath: killed + "/enagent.db-wal")[.size] as? Int ?? 0 > 0,
                "the copy holds the half-done migration's pages")
        try migrating.execute(script: "ROLLBACK")
        try migrating.close()

        let store = try AgentStore(path: killed + "/enagent.db")
        #expect(try store.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.migrations.count)
        #expect(try store.testResults().map(\.id) == ["r1"])
    }
}
