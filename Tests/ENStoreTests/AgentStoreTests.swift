import ENCore
import Foundation
import ENSQLite
@testable import ENStore
import TestSupport
import Synchronization
import Testing

@Suite struct AgentStoreTests {
    let directory = TemporaryDirectory()

    func sighting(_ seed: UInt64, time: Int64, rssi: Int8? = -60) -> Sighting {
        Sighting(rpi: Bytes16(high: seed, low: ~seed), aem: AssociatedEncryptedMetadata(rawValue: UInt32(truncatingIfNeeded: seed)),
                 rssi: rssi, time: time, adapter: "hci0")
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
    }

    /// Below the disk reserve sightings are refused before anything is written, with the room
    /// in words; keys are still written. A file system that cannot be read lets the write go ahead.
    @Test func belowTheDiskReserveSightingsAreRefusedAndKeysWritten() throws {
        let free = Mutex<Int64?>(3 << 20)
        let store = try AgentStore(path: directory.file("reserve.db"), diskReserve: DiskReserve(mebibytes: 4, freeBytes: { _ in free.withLock { $0 } }))
        var refusal: StoreError?
        do { try store.record([sighting(1, time: 1_700_000_000)], scans: [1_700_000_000...1_700_000_001]) } catch { refusal = error }
        guard case .belowDiskReserve(_, let left, let reserve)? = refusal else {
            Issue.record("not refused for the reserve: \(String(describing: refusal))")
            return
        }
        #expect(left == 3 * 1_048_576 && reserve == 4 * 1_048_576)
        #expect("\(refusal!)".contains("has 3 MiB free, less than the 4 MiB kept for keys and consent (disk-reserve-mb in enagent.conf)"))
        #expect(try store.sightingCount() == 0 && store.scans().isEmpty, "nothing of the batch is written")
        let key = TemporaryExposureKey(keyData: Bytes16(high: 1, low: 2), rollingStartIntervalNumber: ENIntervalNumber(2_833_344), rollingPeriod: 144, transmissionRiskLevel: 0)
        _ = try store.insertTemporaryExposureKeyIfAbsent(key, createdAt: 1_700_000_000)
        #expect(try store.temporaryExposureKeys(validAfter: 0).count == 1)
        free.withLock { $0 = nil }
        try store.record([sighting(1, time: 1_700_000_000)])
        free.withLock { $0 = 5 << 20 }
        try store.record([sighting(2, time: 1_700_000_000)])
        #expect(try store.sightingCount() == 2)
    }

    @Test func createsAPrivateDatabaseInWALMode() throws {
        let path = directory.file("state/enagent.db")
        let store = try AgentStore(path: path)
        try store.record([sighting(1, time: 100)])
        #expect(try mode(path) == 0o600)
        #expect(try mode(directory.file("state")) == 0o700)
        #expect(try mode(path + "-wal") == 0o600)
        #expect(try store.read { try $0.fetchOne(String.self, "PRAGMA journal_mode") } == "wal")
    }

    @Test func narrowsTheModeOfAnExistingFile() throws {
        let path = directory.file("enagent.db")
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        _ = try AgentStore(path: path)
        #expect(try mode(path) == 0o600)
    }

    @Test func narrowsItsOwnDirectoryAndRefusesASharedOne() throws {
        let own = directory.file("own")
        #expect(mkdir(own, 0o755) == 0 && chmod(own, 0o755) == 0)
        _ = try AgentStore(path: own + "/enagent.db")
        #expect(try mode(own) == 0o700, "keys are not listed to other users")

        let shared = directory.file("shared")
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o1777) == 0)
        #expect(throws: StoreError.self) { try AgentStore(path: shared + "/enagent.db") }
        do {
            _ = try AgentStore(path: shared + "/enagent.db")
        } catch {
            #expect("\(error)".contains("\(shared) is open to other users (mode 1777)"), "\(error)")
        }
        #expect(try mode(shared) == 0o1777, "a shared directory is left as it is")
        #expect(!FileManager.default.fileExists(atPath: shared + "/enagent.db"), "and holds no database")
    }

    @Test func migratesToTheCurrentSchemaOnceAndKeepsData() throws {
        let path = directory.file("enagent.db")
        do {
            let store = try AgentStore(path: path)
            try store.record([sighting(7, time: 1)])
            try store.close()
        }
        let reopened = try AgentStore(path: path)
        #expect(try reopened.sightingCount() == 1)
        let tables = try reopened.read { try $0.fetchAll(String.self, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") }
        for table in ["consent_event", "exposure_detection", "exposure_window", "key_file", "scan_instance", "v1_key", "v1_sighting",
                      "setting", "sighting", "temporary_exposure_key", "test_result", "pending_upload"] {
            #expect(tables.contains(table), "table \(table)")
        }
        #expect(try reopened.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.migrations.count)
    }

    @Test func aDetectionIsRecordedWithItsFilesAndWindowsAndErasedWithEverythingElse() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let key = DiagnosisKey(key: TemporaryExposureKey(keyData: Bytes16(bytes: Data(repeating: 3, count: 16))!, rollingStartIntervalNumber: ENIntervalNumber(2_900_016),
                                                         transmissionRiskLevel: 4), reportType: .selfReport, daysSinceOnsetOfSymptoms: -2)
        let window = ExposureWindow(date: 1_740_009_600, reportType: .selfReport, infectiousness: .high, calibrationConfidence: 2,
                                    scanInstances: [ScanInstance(minAttenuation: 55, typicalAttenuation: 60, secondsSinceLastScan: 120),
                                                    ScanInstance(minAttenuation: nil, typicalAttenuation: nil, secondsSinceLastScan: 60)],
                                    diagnosisKey: key)
        let digest = Array(repeating: UInt8(9), count: 32)
        try store.recordDetection(startedAt: 10, finishedAt: 20,
                                  keyFiles: [ProcessedKeyFile(sha256: digest, name: "1.zip", region: "CH", keyCount: 1),
                                             ProcessedKeyFile(sha256: Array(repeating: 8, count: 32), name: "2.zip", region: "CH", keyCount: 5)],
                                  matchedKeyCount: 1, windows: [window], risk: .anyWindow)
        try store.recordFailedDetection(startedAt: 30, error: "bad file")
        #expect(try store.exposureWindows() == [window], "windows round-trip, unknown attenuations included")
        #expect(try store.hasProcessedKeyFile(sha256: digest))
        #expect(try store.lastSuccessfulDetection() == 20)
        #expect(try store.lastDetection()?.error == "bad file")
        #expect(try store.latestRiskAssessment() == RiskAssessment(
            verdict: RiskVerdict(total: .increased, lowRiskDays: 0, increasedRiskDays: 1, latestLowRiskDay: nil, latestIncreasedRiskDay: 1_740_009_600,
                                 lowRiskEncounters: 0, increasedRiskEncounters: 1),
            model: .anyWindow, assessedAt: 20))
        try store.eraseAllData()
        #expect(try store.exposureWindows().isEmpty && !store.hasProcessedKeyFile(sha256: digest) && store.lastDetection() == nil)
        #expect(try store.latestRiskAssessment() == nil)
    }

    /// What v1 needs of each matched key is stored with the detection, replaced when the key is
    /// matched or revoked again, and erased with everything else.
    @Test func aDetectionKeepsWhatV1NeedsOfEachKey() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let day: Int64 = 1_740_009_600
        let key = { (byte: UInt8, type: ReportType) in
            DiagnosisKey(key: TemporaryExposureKey(keyData: Bytes16(bytes: Data(repeating: byte, count: 16))!, rollingStartIntervalNumber: ENIntervalNumber(unixSeconds: day)!,
                                                   transmissionRiskLevel: Int(byte)), reportType: type, daysSinceOnsetOfSymptoms: Int(byte) - 5)
        }
        let first = V1Match(key: key(3, .selfReport), sightings: [V1Sighting(time: day + 100, attenuation: 40), V1Sighting(time: day + 100, attenuation: 52),
                                                                  V1Sighting(time: day + 900, attenuation: 0)])
        let second = V1Match(key: key(4, .unknown), sightings: [V1Sighting(time: day + 86_400 + 60, attenuation: 70)])
        try store.recordDetection(startedAt: 10, finishedAt: 20, keyFiles: [], matchedKeyCount: 3, windows: [],
                                  v1Matches: [first, V1Match(key: key(5, .confirmedTest), sightings: []), second])
        #expect(try store.v1Matches() == [first, second], "a key without sightings for v1 is left out; sightings keep their order")
        #expect(try store.read { try $0.fetchAll(Int64.self, "SELECT day FROM v1_key ORDER BY id") } == [day, day + 86_400], "the day of the last sighting")

        let again = V1Match(key: key(3, .confirmedTest), sightings: [V1Sighting(time: day + 200, attenuation: 45)])
        try store.recordDetection(startedAt: 30, finishedAt: 40, keyFiles: [], matchedKeyCount: 1, windows: [], v1Matches: [again],
                                  superseding: [first.key.key.identity, second.key.key.identity])
        #expect(try store.v1Matches() == [again], "a key matched again replaces, one revoked goes")
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM v1_sighting") } == 1, "with their sightings")
        try store.eraseAllData()
        #expect(try store.v1Matches().isEmpty && store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM v1_sighting") } == 0)
    }

    /// Keys that detections matched before schema version 8 kept only their windows: they keep
    /// them, and give v1 nothing.
    @Test func aVersion7DatabaseKeepsItsWindowsAndHasNoV1Records() throws {
        let path = directory.file("v7.db")
        let connection = try database(at: path, version: 7)
        try connection.execute("INSERT INTO exposure_detection (id, started_at, finished_at) VALUES (1, 10, 20)")
        try connection.execute("""
            INSERT INTO exposure_window (id, detection_id, day, report_type, infectiousness, calibration_confidence,
                key_data, rolling_start_interval_number, rolling_period, transmission_risk_level)
            VALUES (1, 1, 1740009600, 1, 1, 0, zeroblob(16), 2900016, 144, 4)
            """)
        try connection.execute("INSERT INTO scan_instance VALUES (1, 50, 55, 120)")
        try connection.close()
        let store = try AgentStore(path: path)
        #expect(try store.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.migrations.count)
        #expect(try store.exposureWindows().map(\.scanInstances) == [[ScanInstance(minAttenuation: 50, typicalAttenuation: 55, secondsSinceLastScan: 120)]])
        #expect(try store.v1Matches().isEmpty)
    }

    @Test func aVersion1DatabaseIsMigratedKeepingItsTestResults() throws {
        let path = directory.file("v1.db")
        let connection = try database(at: path, version: 1)
        try connection.execute("INSERT INTO test_result (id, test_date, verification_method, recorded_at) VALUES ('r1', 86400, 'verification-code', 90000)")
        try connection.close()
        let store = try AgentStore(path: path)
        #expect(try store.testResults().map(\.id) == ["r1"])
        try store.queueUpload(testResultId: "r1", url: "http://127.0.0.1/v1/publish", body: "{}", at: 100)
        #expect(try store.testResults().first?.uploadPending == true)
        try store.finishUpload(testResultId: "r1", .accepted(revisionToken: "rev-1"), at: 200)
        #expect(try store.testResults().first?.sharedAt == 200)
        #expect(try store.testResults().first?.revisionToken == "rev-1")
        #expect(try store.pendingUploads().isEmpty)
    }

    /// An upload refused for now waits for its next attempt; one refused for good ends with the
    /// reason; an accepted one keeps its keys and the revision token for the next upload.
    @Test func uploadsAreRetriedRefusedOrAcceptedWithTheirKeys() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        try store.recordTestResult(TestResult(id: "r1", testDate: 86_400, verificationMethod: "verification-code", verificationDetail: nil, recordedAt: 90_000))
        let keys = try (0..<2).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
        try store.queueUpload(testResultId: "r1", url: "http://127.0.0.1/v1/publish", body: "{}", keys: keys, at: 100)
        try store.finishUpload(testResultId: "r1", .retry(reason: "HTTP 503", at: 1_000), at: 200)
        let pending = try #require(try store.pendingUploads().first)
        #expect(pending.attempts == 1 && pending.lastError == "HTTP 503" && pending.nextAttemptAt == 1_000)
        try store.finishUpload(testResultId: "r1", .refused(reason: "HTTP 400: the certificate has expired"), at: 1_100)
        #expect(try store.pendingUploads().isEmpty)
        #expect(try store.testResults().first?.uploadFailure == "HTTP 400: the certificate has expired")
        #expect(try store.testResults().first?.sharedAt == nil && store.testResults().first?.uploadPending == false)

        try store.queueUpload(testResultId: "r1", url: "http://127.0.0.1/v1/publish", body: "{}", keys: keys, at: 1_200)
        #expect(try store.testResults().first?.uploadFailure == nil, "a new upload clears the old failure")
        #expect(try store.pendingUploads().first?.attempts == 0)
        try store.finishUpload(testResultId: "r1", .accepted(revisionToken: "rev-1"), at: 1_300)
        let shared = try #require(try store.testResults().first)
        #expect(shared.sharedAt == 1_300 && shared.revisionToken == "rev-1" && Set(shared.sharedKeys) == Set(keys))
        try store.queueUpload(testResultId: "r1", url: "http://127.0.0.1/v1/publish", body: "{}", keys: [keys[0]], at: 1_400)
        try store.finishUpload(testResultId: "r1", .accepted(revisionToken: nil), at: 1_500)
        #expect(try store.testResults().first?.revisionToken == "rev-1", "a server that sends no new token keeps the old one")
        try store.eraseAllData()
        #expect(try store.testResults().isEmpty)
    }

    /// A database at schema version `version`, made by the store's own migrations.
    func database(at path: String, version: Int) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        try connection.execute(script: Schema.migrations.prefix(version).joined(separator: ";\n") + "; PRAGMA user_version = \(version)")
        return connection
    }

    @Test func refusesADatabaseFromANewerVersion() throws {
        let path = directory.file("enagent.db")
        let connection = try database(at: path, version: Schema.migrations.count)
        try connection.execute(script: "PRAGMA user_version = \(Schema.migrations.count + 1)")
        try connection.close()
        expectError({ _ = try AgentStore(path: path) }) { error in
            guard case StoreError.newerSchema = error else { return false }
            return "\(error)".contains("newer version")
        }
    }

    @Test func reportsAFileThatIsNotADatabase() throws {
        let path = directory.file("enagent.db")
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: path))
        expectError({ _ = try AgentStore(path: path) }) { error in
            guard case StoreError.corrupt(let reportedPath, _) = error else { return false }
            return reportedPath == path && "\(error)".contains("move the file aside")
        }
    }

    @Test func reportsDamagedPages() throws {
        let path = directory.file("enagent.db")
        do {
            let store = try AgentStore(path: path)
            try store.record((0..<5_000).map { sighting($0, time: Int64($0)) })
            try store.close()
        }
        // Overwrite the middle of the file, where the sighting table's pages are.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        try handle.write(contentsOf: Data(repeating: 0xa5, count: 8192))
        try handle.close()
        expectError({ _ = try AgentStore(path: path) }) { error in
            guard case StoreError.corrupt = error else { return false }
            return true
        }
    }

    @Test func reportsAnUnwritableLocation() throws {
        let path = directory.file("enagent.db")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        expectError({ _ = try AgentStore(path: path) }) { error in
            guard case StoreError.cannotOpen = error else { return false }
            return true
        }
    }

    @Test func aBatchOfTenThousandIsOneTransaction() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        var batch = (0..<10_000).map { sighting($0, time: 1_000 + Int64($0)) }
        try store.record(batch)
        #expect(try store.sightingCount() == 10_000)
        // One bad row (a negative time breaks a CHECK) makes the whole batch fail: nothing half-written.
        batch[9_999].time = -1
        #expect(throws: StoreError.self) { try store.record(batch) }
        #expect(try store.sightingCount() == 10_000)
    }

    /// Per UTC hour: every sighting, and each identifier once however often it was heard; an hour
    /// boundary splits one identifier's sightings of two scans, while the receptions of one scan
    /// are one sighting, of the hour of its first; hours without sightings are not listed; `since`
    /// keeps the hour it falls in and the later ones.
    @Test func sightingsAreCountedPerHourWithTheirDistinctIdentifiers() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let hour: Int64 = 1_764_230_400  // 2025-11-27 08:00 UTC
        try store.record([sighting(1, time: hour), sighting(1, time: hour + 300), sighting(2, time: hour + 3_599),
                          sighting(4, time: hour + 3_590), sighting(4, time: hour + 3_610), sighting(2, time: hour + 3_660),
                          sighting(3, time: hour + 3 * 3_600 + 5)])
        try store.record([sighting(1, time: hour + 1_800)])
        #expect(try store.sightingsPerHour() == [
            SightingHour(start: hour, sightings: 5, distinctIdentifiers: 3),
            SightingHour(start: hour + 3_600, sightings: 1, distinctIdentifiers: 1),
            SightingHour(start: hour + 3 * 3_600, sightings: 1, distinctIdentifiers: 1),
        ])
        #expect(try store.sightingsPerHour(since: hour + 3_600 + 1_800) == [
            SightingHour(start: hour + 3_600, sightings: 1, distinctIdentifiers: 1),
            SightingHour(start: hour + 3 * 3_600, sightings: 1, distinctIdentifiers: 1),
        ], "from the hour `since` falls in")
        try store.eraseAllData()
        #expect(try store.sightingsPerHour().isEmpty)
    }

    /// The count SightingsStored reads is the database's own, kept in each write's transaction:
    /// after batches, retention, a failed batch and the erase, and from a version 8 database with rows.
    @Test func theDatabaseCountsItsSightingsAsItStoresAndDeletesThem() throws {
        let path = directory.file("v8.db")
        let connection = try database(at: path, version: 8)
        for index in 0..<3 {
            try connection.execute("INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, zeroblob(4), -60, ?, 'hci0')",
                                   [UInt8](repeating: UInt8(index), count: 16), Int64(100 + index))
        }
        try connection.close()
        let store = try AgentStore(path: path)
        func counted() throws -> (Int, Int) {
            (try store.sightingCount(), try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sighting") ?? -1 })
        }
        #expect(try counted() == (3, 3))
        try store.record((0..<5).map { sighting(UInt64(10 + $0), time: 1_000_000) })
        #expect(try counted() == (8, 8))
        // 127 is no RSSI the schema takes: the third insert fails, and the batch with it.
        let failing = [sighting(20, time: 1_000_000), sighting(21, time: 1_000_000), sighting(22, time: 1_000_000, rssi: 127)]
        #expect(throws: StoreError.self) { try store.record(failing) }
        #expect(try counted() == (8, 8), "a batch that failed counts none of its sightings")
        try store.applyRetention(RetentionPolicy(days: 14), now: 2_000_000)
        #expect(try counted() == (5, 5))
        try store.eraseAllData()
        #expect(try counted() == (0, 0))
    }

    @Test func aBatchOfSightingsIsToldOnceStored() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let told = Mutex(0)
        store.whenSightingsRecorded { told.withLock { $0 += 1 } }
        try store.record([sighting(1, time: 100), sighting(2, time: 101)])
        try store.record([], scans: [100...104])
        #expect(told.withLock { $0 } == 1, "a batch is told once, and scans alone change no count")
    }

    @Test func sightingsRoundTripWithUnknownRSSI() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let stored = [sighting(1, time: 10, rssi: -128), sighting(2, time: 20, rssi: nil), sighting(3, time: 30, rssi: 126)]
        try store.record(stored.reversed())
        #expect(try store.sightingRecords().flatMap(\.sightings) == stored)
        #expect(try store.sightingRecords(from: 20, until: 30).flatMap(\.sightings) == [stored[1]])
        let index = try store.sightingIndex()
        #expect(index.count == 3)
        #expect(stored.allSatisfy { index.sightings(of: $0.rpi) == [IndexedSighting(time: $0.time, aem: $0.aem, rssi: $0.rssi)] })
    }

    /// A sighting keeps the address of the adapter that recorded it (which picks its RSSI
    /// correction), into the index too; an unknown one stays unknown.
    @Test func sightingsKeepTheirAdaptersAddress() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), highest = try #require(BluetoothAddress("FF:FF:FF:FF:FF:FF"))
        var stored = [sighting(1, time: 10), sighting(2, time: 20), sighting(3, time: 30), sighting(4, time: 40)]
        (stored[0].adapterAddress, stored[2].adapterAddress, stored[3].adapterAddress) = (dongle, highest, dongle)
        try store.record(stored)
        let read = try store.sightingRecords().flatMap(\.sightings)
        #expect(read == stored)
        let index = try store.sightingIndex()
        #expect(Set(index.adapterAddresses) == [dongle, highest])
        #expect(stored.allSatisfy { sighting in
            index.sightings(of: sighting.rpi).map(\.adapterAddress) == [sighting.adapterAddress]
        })
    }

    /// Scans are recorded with the sightings heard in them, one row per scan: recorded again as it
    /// goes on, a scan keeps its start and takes the later end. Retention keeps the scan before
    /// the oldest sighting's own, by which that sighting is weighed.
    @Test func scansAreRecordedWithTheirSightingsAndKeptForTheOldest() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let now: Int64 = 1_700_000_000, cutoff = RetentionPolicy.protocolDefault.cutoff(now: now)
        try store.record([sighting(1, time: cutoff - 100)], scans: [(cutoff - 700)...(cutoff - 696), (cutoff - 400)...(cutoff - 396), (cutoff - 100)...(cutoff - 100)])
        try store.record([], scans: [(cutoff - 100)...(cutoff - 96), (cutoff + 200)...(cutoff + 204)])
        try store.record([sighting(2, time: cutoff + 500)], scans: [(cutoff + 500)...(cutoff + 500)])
        #expect(try store.scans() == [(cutoff - 700)...(cutoff - 696), (cutoff - 400)...(cutoff - 396), (cutoff - 100)...(cutoff - 96),
                                      (cutoff + 200)...(cutoff + 204), (cutoff + 500)...(cutoff + 500)])
        try store.applyRetention(.protocolDefault, now: now)
        #expect(try store.scans() == [(cutoff - 100)...(cutoff - 96), (cutoff + 200)...(cutoff + 204), (cutoff + 500)...(cutoff + 500)],
                "the last scan before the cutoff stays, the older ones go")
        #expect(try store.sightingRecords().flatMap(\.sightings).map(\.time) == [cutoff + 500])
    }

    /// The index weighs each sighting by the scan before its own, from the recorded scans: whole
    /// minutes, at most 5; unknown for one recorded before any scan was.
    @Test func theIndexWeighsEachSightingByThePreviousRecordedScan() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let before = sighting(1, time: 1_000), first = sighting(2, time: 2_001), second = sighting(3, time: 2_125), late = sighting(4, time: 9_000)
        try store.record([before])
        try store.record([first], scans: [2_000...2_004])
        try store.record([second], scans: [2_120...2_124])
        try store.record([late], scans: [8_990...9_004])
        let index = try store.sightingIndex()
        let gaps = [before, first, second, late].map { index.sightings(of: $0.rpi).first?.scanGap.minutes }
        #expect(gaps == [nil, nil, 2, 5], "unknown before the records and in the first; 2125 s is 2 minutes of the clock after 2000 s; at most 5")
    }

    /// The index is filled on another thread, batch by batch: every sighting arrives, once.
    @Test func theIndexHoldsEverySightingOfSeveralBatches() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let stored = (0..<10_001).map { (seed: UInt64) in
            Sighting(rpi: Bytes16(high: seed &* 0x9E37_79B9_7F4A_7C15, low: seed), aem: AssociatedEncryptedMetadata(rawValue: UInt32(seed)),
                     rssi: seed % 7 == 0 ? nil : Int8(-(Int(seed) % 100)), time: 1_000 + Int64(seed), adapter: "hci0")
        }
        try store.record(stored)
        let index = try store.sightingIndex()
        #expect(index.count == stored.count)
        #expect(stored.allSatisfy { index.sightings(of: $0.rpi) == [IndexedSighting(time: $0.time, aem: $0.aem, rssi: $0.rssi)] })
    }

    @Test func keepsOneKeyPerRollingPeriod() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let start = ENIntervalNumber(2_642_976)
        let first = TemporaryExposureKey(keyData: Bytes16(high: 1, low: 1), rollingStartIntervalNumber: start)
        let second = TemporaryExposureKey(keyData: Bytes16(high: 2, low: 2), rollingStartIntervalNumber: start)
        #expect(try store.insertTemporaryExposureKeyIfAbsent(first, createdAt: 5) == first)
        #expect(try store.insertTemporaryExposureKeyIfAbsent(second, createdAt: 6) == first)
        #expect(try store.temporaryExposureKey(startingAt: start) == first)
        #expect(try store.temporaryExposureKey(startingAt: ENIntervalNumber(start.rawValue + 144)) == nil)
    }

    /// Rolling ends the day's current key after an interval and adds a fresh one with the same
    /// rolling start, in one transaction, up to a limit of keys per day.
    @Test func aDayRollsToAFreshKeyUpToTheLimit() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let start = ENIntervalNumber(2_642_976)
        let first = TemporaryExposureKey(keyData: Bytes16(high: 1, low: 1), rollingStartIntervalNumber: start)
        let second = TemporaryExposureKey(keyData: Bytes16(high: 2, low: 2), rollingStartIntervalNumber: start)
        let third = TemporaryExposureKey(keyData: Bytes16(high: 3, low: 3), rollingStartIntervalNumber: start)
        _ = try store.insertTemporaryExposureKeyIfAbsent(first, createdAt: 5)
        #expect(try store.rollTemporaryExposureKey(endingAfter: ENIntervalNumber(start.rawValue + 40), to: second, createdAt: 6, limit: 2) == second)
        #expect(try store.temporaryExposureKey(startingAt: start) == second, "the newest key is the day's current one")
        #expect(try store.insertTemporaryExposureKeyIfAbsent(third, createdAt: 7) == second)
        #expect(try store.rollTemporaryExposureKey(endingAfter: ENIntervalNumber(start.rawValue + 50), to: third, createdAt: 8, limit: 2) == nil)
        let keys = try store.temporaryExposureKeys(validAfter: 0)
        #expect(keys.map(\.keyData) == [first.keyData, second.keyData])
        #expect(keys.map(\.rollingPeriod) == [41, 144], "the first key ends after interval 40 of the day")
    }

    @Test func aVersion2DatabaseKeepsItsKeysInVersion3() throws {
        let path = directory.file("v2.db")
        let connection = try database(at: path, version: 2)
        for (day, byte) in [(2_642_976, 1), (2_643_120, 2)] {
            try connection.execute("INSERT INTO temporary_exposure_key (rolling_start_interval_number, key_data, rolling_period, created_at) VALUES (?, ?, 144, 1)",
                                   day, [UInt8](repeating: UInt8(byte), count: 16))
        }
        try connection.close()
        let store = try AgentStore(path: path)
        let keys = try store.temporaryExposureKeys(validAfter: 0)
        #expect(keys.map(\.rollingStartIntervalNumber.rawValue) == [2_642_976, 2_643_120])
        #expect(keys.map(\.keyData) == [Bytes16(bytes: Data(repeating: 1, count: 16))!, Bytes16(bytes: Data(repeating: 2, count: 16))!])
    }

    @Test func retentionForgetsWhatIsOlderThanFourteenDays() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let day: Int64 = 86_400
        let now = 20_000 * day + 3_600
        for age in 0...16 {
            let start = ENIntervalNumber(unixSeconds: now - Int64(age) * day)!.rollingPeriodStart
            _ = try store.insertTemporaryExposureKeyIfAbsent(
                TemporaryExposureKey(keyData: Bytes16(high: UInt64(age), low: 9), rollingStartIntervalNumber: start), createdAt: now)
        }
        try store.record([sighting(1, time: now - 14 * day - 1), sighting(2, time: now - 14 * day), sighting(3, time: now)])
        try store.write { db in
            try db.execute("INSERT INTO exposure_detection (id, started_at) VALUES (1, 0)")
            for (id, dayStart) in [(1, 20_000 - 15), (2, 20_000 - 14), (3, 20_000)] {
                try db.execute("""
                    INSERT INTO exposure_window (id, detection_id, day, report_type, infectiousness, calibration_confidence,
                        key_data, rolling_start_interval_number, rolling_period, transmission_risk_level)
                    VALUES (?, 1, ?, 1, 1, 0, zeroblob(16), 0, 144, 0)
                    """, id, Int64(dayStart) * day)
                try db.execute("INSERT INTO scan_instance VALUES (?, 50, 55, 120)", id)
            }
            // v1 records go by the day of their key's last sighting, as windows by theirs.
            for (id, dayStart) in [(1, 20_000 - 15), (2, 20_000 - 14)] {
                try db.execute("""
                    INSERT INTO v1_key (id, detection_id, day, key_data, rolling_start_interval_number, rolling_period, transmission_risk_level, report_type)
                    VALUES (?, 1, ?, zeroblob(16), 0, 144, 0, 1)
                    """, id, Int64(dayStart) * day)
                try db.execute("INSERT INTO v1_sighting VALUES (?, ?, 50)", id, Int64(dayStart) * day + 100)
            }
        }

        let report = try store.applyRetention(.protocolDefault, now: now)

        // Keys whose day ended more than 14 days ago go: ages 15 and 16; the age-14 key still
        // covers the last hour of the 14-day window.
        #expect(report == RetentionReport(temporaryExposureKeys: 2, sightings: 1, exposureWindows: 1, v1Keys: 1))
        #expect(try store.temporaryExposureKeys(validAfter: RetentionPolicy.protocolDefault.cutoff(now: now)).count == 15)
        #expect(try store.sightingRecords().flatMap(\.sightings).map(\.time) == [now - 14 * day, now])
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM scan_instance") } == 2, "a window's scans go with it")
        #expect(try store.read { try $0.fetchAll(Int64.self, "SELECT key_id FROM v1_sighting") } == [2], "a v1 record's sightings go with it")
        #expect(try store.applyRetention(.protocolDefault, now: now) == RetentionReport(temporaryExposureKeys: 0, sightings: 0, exposureWindows: 0))
    }

    @Test func settingsConsentAndKeyFilesPersist() throws {
        let path = directory.file("enagent.db")
        do {
            let store = try AgentStore(path: path)
            #expect(try store.currentConsent() == nil)
            try store.recordConsent(ConsentEvent(granted: true, recordedAt: 10))
            try store.recordConsent(ConsentEvent(granted: false, recordedAt: 20))
            try store.setSetting("paused-until", to: "123")
            try store.setSetting("paused-until", to: "456")
            try store.setSetting("other", to: "x")
            try store.setSetting("other", to: nil)
            try store.recordProcessedKeyFile(ProcessedKeyFile(sha256: Array(repeating: 7, count: 32), name: "a.zip", region: "US", keyCount: 140), at: 5)
            try store.close()
        }
        let store = try AgentStore(path: path)
        #expect(try store.currentConsent() == ConsentEvent(granted: false, recordedAt: 20))
        #expect(try store.setting("paused-until") == "456")
        #expect(try store.setting("other") == nil)
        #expect(try store.hasProcessedKeyFile(sha256: Array(repeating: 7, count: 32)))
        #expect(try !store.hasProcessedKeyFile(sha256: Array(repeating: 8, count: 32)))
    }

    /// A setting set unless the store is busy is set at once when no other write holds the
    /// writer, and not at all while one does (the radio's queue must not wait for a scan's
    /// sightings or a checkpoint).
    @Test func aSettingUnlessBusyIsSetOnlyWhenNoWriteHoldsTheStore() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        #expect(try store.setUnlessBusy(StoreSettings.advertisedInterval, to: 2_992_886))
        #expect(try store.value(StoreSettings.advertisedInterval) == 2_992_886)
        let writing = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? store.write { _ in
                writing.signal()
                done.wait()
            }
        }
        writing.wait()
        #expect(try !store.setUnlessBusy(StoreSettings.advertisedInterval, to: 2_992_887))
        done.signal()
        #expect(try store.setting("advertised-interval") == "2992886", "nothing set while the store was busy")
    }

    /// Each setting reads back what it wrote, under its own name; a text that is not a value of
    /// its kind (a hand edit, damage) is an error naming the setting, never "none".
    @Test func typedSettingsRoundTripAndRefuseDamage() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        try store.set(StoreSettings.pausedUntil, to: 1_790_000_000)
        try store.set(StoreSettings.advertisedInterval, to: 2_992_886)
        try store.set(StoreSettings.advertisingInstance, to: AdapterNumber(adapter: "hci1", number: 5))
        #expect(try store.value(StoreSettings.pausedUntil) == 1_790_000_000)
        #expect(try store.setting("paused-until") == "1790000000")
        #expect(try store.value(StoreSettings.advertisedInterval) == 2_992_886)
        #expect(try store.setting("advertising-instance") == "hci1 5")
        #expect(try store.value(StoreSettings.advertisingInstance) == AdapterNumber(adapter: "hci1", number: 5))
        #expect(try store.value(StoreSettings.scanMonitor) == nil)
        try store.set(StoreSettings.pausedUntil, to: nil)
        #expect(try store.setting("paused-until") == nil)
        try store.setSetting("advertised-interval", to: "soon")
        #expect(throws: StoreError.self) { try store.value(StoreSettings.advertisedInterval) }
        do { _ = try store.value(StoreSettings.advertisedInterval) } catch { #expect("\(error)".contains("advertised-interval")) }
        try store.setSetting("scan-monitor", to: "hci0")
        #expect(throws: StoreError.self) { try store.value(StoreSettings.scanMonitor) }
        let stalled = StalledBluetoothd(owner: "3c0f9d2e5a6b4d7c8e9f0a1b2c3d4e5f :1.42", adapter: "hci0", address: "00:1A:7D:DA:71:13")
        try store.set(StoreSettings.stalledBluetoothd, to: stalled)
        #expect(try store.setting("stalled-bluetoothd") == "hci0 00:1A:7D:DA:71:13 3c0f9d2e5a6b4d7c8e9f0a1b2c3d4e5f :1.42")
        #expect(try store.value(StoreSettings.stalledBluetoothd) == stalled)
        try store.setSetting("stalled-bluetoothd", to: "hci0 :1.42")
        #expect(throws: StoreError.self) { try store.value(StoreSettings.stalledBluetoothd) }
        #expect(Set(StoreSettings.names).count == StoreSettings.names.count)
    }

    @Test func deletedRowsAreOverwritten() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        #expect(try store.write { try $0.fetchOne(Int.self, "PRAGMA secure_delete") } == 1)
        #expect(try store.write { try $0.fetchOne(Int.self, "PRAGMA foreign_keys") } == 1, "ON DELETE CASCADE needs it")
    }
}

/// The scan before a sighting's own, as Google's matching weighs it.
struct ScanHistoryTests {
    @Test func theScanBeforeASightingsOwn() {
        var history = ScanHistory([100...104, 400...404, 700...707])
        #expect(history.previousScanStart(forSightingAt: 50) == nil, "before any record: unknown")
        #expect(history.previousScanStart(forSightingAt: 102) == nil, "heard in the first scan recorded: the one before is unknown")
        #expect(history.previousScanStart(forSightingAt: 403) == 100)
        #expect(history.previousScanStart(forSightingAt: 405) == 100, "a report stamped just after its scan's end")
        #expect(history.previousScanStart(forSightingAt: 550) == 400, "its own scan not recorded: the one recorded before it")
        #expect(history.previousScanStart(forSightingAt: 707) == 400)
        #expect(history.previousScanStart(forSightingAt: 401) == 100, "out of order: found again")
        #expect(history.previousScanStart(forSightingAt: 9_999) == 700)
        var empty = ScanHistory([])
        #expect(empty.previousScanStart(forSightingAt: 1) == nil)
    }
}

/// Durability stated, not inherited from the build: every commit synced, the log kept small.
@Suite struct DurabilityTests {
    let directory = TemporaryDirectory()

    @Test func commitsAreSyncedInFull() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        #expect(try store.write { try $0.fetchOne(Int.self, "PRAGMA synchronous") } == 2, "FULL")
        #expect(try store.write { try $0.fetchOne(String.self, "PRAGMA journal_mode") } == "wal")
    }

    /// A run that never closes the store (a power cut) still folds its log: after a checkpoint
    /// the next write starts the log anew, cut back to its limit.
    @Test func aCheckpointKeepsTheLogSmallWhileTheStoreIsOpen() throws {
        let path = directory.file("enagent.db")
        let store = try AgentStore(path: path)
        let walSize = { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1 }
        for batch in 0..<40 {
            try store.record((0..<200).map { index in
                Sighting(rpi: Bytes16(high: UInt64(batch), low: UInt64(index)), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: -60,
                         time: 1_700_000_000 + Int64(batch), adapter: "hci0")
            })
        }
        #expect(walSize() > AgentStore.walSizeLimit, "the log grew: \(walSize())")
        try store.checkpoint()
        try store.record([Sighting(rpi: Bytes16(high: 99, low: 0), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: -60, time: 1_700_000_100, adapter: "hci0")])
        #expect(walSize() <= AgentStore.walSizeLimit, "the log was cut back: \(walSize())")
        #expect(try store.sightingCount() == 8_001)
    }

    /// The log is folded beside a write, not after it: a crowd's scan being written does not hold
    /// the upkeep's checkpoint up, nor would a checkpoint that takes seconds on a slow disk hold
    /// up the writes (a rotation's interval, a key's roll) behind it.
    @Test func aCheckpointRunsWhileAWriteHoldsTheWriter() throws {
        let path = directory.file("enagent.db")
        let store = try AgentStore(path: path)
        try store.record((0..<2_000).map { index in
            Sighting(rpi: Bytes16(high: 1, low: UInt64(index)), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: -60, time: 1_700_000_000, adapter: "hci0")
        })
        let writing = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0), folded = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? store.write { _ in
                writing.signal()
                done.wait()
            }
        }
        writing.wait()
        let failure = Mutex<StoreError?>(nil)
        DispatchQueue.global().async {
            do throws(StoreError) { try store.checkpoint() } catch { failure.withLock { $0 = error } }
            folded.signal()
        }
        let foldedMeanwhile = folded.wait(timeout: .now() + 30) == .success
        done.signal()
        if !foldedMeanwhile { folded.wait() }
        #expect(foldedMeanwhile, "the checkpoint waited for the write")
        #expect(failure.withLock { $0 == nil })
        try store.close()
    }
}
