import ENCore
import ENSQLite
@testable import ENStore
import Foundation
import TestSupport
import Testing

/// The index the database keeps of its sightings (`sighting_batch`, schema v10): written with
/// each batch, cut by retention, built by the migration and whenever it disagrees with the
/// sighting table, and what a detection reads instead of every sighting row.
@Suite struct SightingBatchTests {
    let directory = TemporaryDirectory()

    func sighting(_ seed: UInt64, time: Int64, rssi: Int8? = -60, adapterAddress: BluetoothAddress? = nil) -> Sighting {
        Sighting(rpi: Bytes16(high: seed &* 0x9E37_79B9_7F4A_7C15, low: ~seed), aem: AssociatedEncryptedMetadata(rawValue: UInt32(truncatingIfNeeded: seed)),
                 rssi: rssi, time: time, adapter: "hci0", adapterAddress: adapterAddress)
    }

    /// Every entry of the index, in id order, as (id, RPI, time).
    struct Entry: Hashable {
        var id: Int64
        var rpi: RollingProximityIdentifier
        var time: Int64
    }

    func entries(_ store: AgentStore) throws -> [Entry] {
        try store.read { db in try Self.entries(in: db) }
    }

    static func entries(in db: SQLiteConnection) throws -> [Entry] {
        var found = [Entry]()
        try db.forEachRow("SELECT first_id, entries FROM sighting_batch ORDER BY first_id") { row throws(SQLiteError) in
            let first = row.int64(0)
            let blob = try row.column(1) as [UInt8]
            blob.withUnsafeBytes { entries in
                for number in 0..<entries.count / SightingBatches.entrySize {
                    let (rpi, time) = SightingBatches.entry(number, of: entries)
                    found.append(Entry(id: first + Int64(number), rpi: rpi, time: time))
                }
            }
        }
        return found
    }

    /// What the sighting table holds, as the index should.
    func rows(_ store: AgentStore) throws -> [Entry] {
        try store.read { db in
            try db.fetchAll("SELECT id, rpi, seen_at FROM sighting ORDER BY id") { row throws(SQLiteError) in
                Entry(id: row.int64(0), rpi: try row.column(1, as: [UInt8].self).withUnsafeBytes { Bytes16($0) }, time: row.int64(2))
            }
        }
    }

    func isConsistent(_ store: AgentStore) throws -> Bool {
        try store.read { db in try SightingBatches.isConsistent(in: db) }
    }

    /// The details a detection reads for every stored sighting, and those a pass over the rows gives.
    func expectDetailsAsAPassGives(_ store: AgentStore, _ stored: [Sighting]) throws {
        let index = try store.detectionIndex(), stepped = try store.sightingIndex()
        #expect(index.resolver != nil && stepped.resolver == nil)
        #expect(index.count == stepped.count)
        for rpi in Set(stored.map(\.rpi)) {
            #expect(try index.resolvedSightings(of: rpi) == stepped.sightings(of: rpi))
        }
    }

    @Test func eachBatchIsIndexedAsARebuildWouldIndexIt() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13"))
        let first = (0..<50).map { sighting(UInt64($0), time: 10_000 + Int64($0), adapterAddress: $0 % 2 == 0 ? dongle : nil) }
        let second = (50..<120).map { sighting(UInt64($0), time: 10_400 + Int64($0), rssi: $0 % 5 == 0 ? nil : -70) }
        try store.record(first, scans: [10_000...10_049])
        try store.record(second, scans: [10_450...10_519])
        let scan = [sighting(500, time: 20_000), sighting(500, time: 20_004)]
        try store.record(scan)
        let recorded = try entries(store)
        let rows = try rows(store), consistent = try isConsistent(store)
        #expect(recorded == rows)
        #expect(recorded.count == 121 && consistent, "an entry a sighting, whose receptions of one scan are one")
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sighting_batch") } == 3, "a row a batch")
        try store.write { try SightingBatches.rebuild(in: $0) }
        #expect(try entries(store) == recorded, "a rebuild gives the same entries")
        try expectDetailsAsAPassGives(store, first + second + scan)
    }

    /// The index is what `record` wrote: a detection reads it, not the rows. A row's RPI changed
    /// by hand (its count and ids as they were) is not seen, and the sighting it held no longer
    /// counts (its row holds another RPI now); a pass over the rows would find the new one.
    @Test func aDetectionStepsThroughNoSightingRow() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let stored = (0..<20).map { sighting(UInt64($0), time: 5_000 + Int64($0)) }
        try store.record(stored)
        let changed = sighting(999, time: 0).rpi
        try store.write { try $0.execute("UPDATE sighting SET rpi = ? WHERE rpi = ?", changed.bytes, stored[3].rpi.bytes) }
        let index = try store.detectionIndex()
        var references = [Int64]()
        index.forEachSighting(of: stored[3].rpi) { _, reference in references.append(reference) }
        #expect(references.count == 1, "the index still holds the RPI the batch stored")
        #expect(try index.resolvedSightings(of: stored[3].rpi).isEmpty, "and its row, which holds another RPI now, does not count")
        #expect(try index.resolvedSightings(of: changed).isEmpty)
        #expect(try store.sightingIndex().sightings(of: changed).count == 1, "a pass over the rows finds the changed one")
        #expect(try index.resolvedSightings(of: stored[4].rpi) == [IndexedSighting(time: stored[4].time, aem: stored[4].aem, rssi: -60)])
    }

    /// A batch that fails half-way stores neither its sightings nor their entries: one transaction.
    @Test func aFailedBatchLeavesNeitherSightingsNorEntries() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        try store.record([sighting(1, time: 100), sighting(2, time: 101)])
        let before = try entries(store)
        // 127 is no RSSI the schema takes: the third insert fails, after two went in.
        #expect(throws: StoreError.self) { try store.record([sighting(3, time: 102), sighting(4, time: 103), sighting(5, time: 104, rssi: 127)]) }
        #expect(try entries(store) == before && before.count == 2)
        #expect(try isConsistent(store))
        try store.record([sighting(6, time: 105)])
        let after = try entries(store), rows = try rows(store), consistent = try isConsistent(store)
        #expect(after == rows && consistent)
    }

    /// An index that disagrees with the table (a database written around the store, restored in
    /// part, or whose index rows were lost) is built again before a detection reads it.
    @Test func aStaleIndexIsRebuiltBeforeADetection() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let stored = (0..<30).map { sighting(UInt64($0), time: 7_000 + Int64($0) * 30) }
        try store.record(Array(stored[0..<10]), scans: [7_000...7_300])
        try store.record(Array(stored[10..<30]), scans: [7_300...7_900])
        let recorded = try entries(store)
        let before = try store.detectionIndex()
        let found = try stored.map { try before.resolvedSightings(of: $0.rpi) }

        try store.write { try $0.execute("DELETE FROM sighting_batch WHERE first_id > 1") }
        #expect(try !isConsistent(store))
        let rebuilt = try store.detectionIndex()
        #expect(try isConsistent(store) && entries(store) == recorded)
        #expect(try stored.map { try rebuilt.resolvedSightings(of: $0.rpi) } == found)

        // Sightings written as an older enagent wrote them, without the index.
        let older = sighting(77, time: 9_000)
        try store.write { db in
            try db.execute("INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, -50, ?, 'hci0')", older.rpi.bytes, older.aem.bytes, older.time)
        }
        #expect(try !isConsistent(store))
        #expect(try store.detectionIndex().resolvedSightings(of: older.rpi).map(\.rssi) == [-50])
        #expect(try isConsistent(store) && entries(store) == rows(store))
    }

    /// Retention cuts the index as it deletes the rows, in one transaction: rows wholly older go,
    /// a row partly older keeps its newer entries (in runs of consecutive ids), newer rows stay.
    @Test func retentionCutsTheIndexExactly() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let day: Int64 = 86_400, now = 20_000 * day
        let cutoff = RetentionPolicy.protocolDefault.cutoff(now: now)
        try store.record((0..<10).map { sighting(UInt64($0), time: cutoff - 1_000 + Int64($0)) })
        // Older and newer interleaved (a clock stepped back within a batch): the row splits.
        try store.record((10..<30).map { sighting(UInt64($0), time: $0 % 3 == 0 ? cutoff - 5 : cutoff + Int64($0)) })
        try store.record((30..<40).map { sighting(UInt64($0), time: now - Int64($0)) })
        #expect(try entries(store).count == 40)

        let report = try store.applyRetention(.protocolDefault, now: now)
        #expect(report.sightings == 16)
        let kept = try entries(store), rows = try rows(store)
        #expect(kept == rows && kept.count == 24)
        #expect(kept.allSatisfy { $0.time >= cutoff })
        #expect(try isConsistent(store))
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sighting_batch") } == 7 + 1,
                "the cut row in its runs of consecutive ids, and the newer one")
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sighting_batch WHERE earliest < ?", cutoff) } == 0)

        try store.eraseAllData()
        #expect(try entries(store).isEmpty && isConsistent(store))
    }

    /// Migrating a version 9 database builds the index of the sightings it holds: one row per run
    /// of consecutive ids, at most `maximumEntries` a row; the RPI index goes.
    @Test func theMigrationIndexesTheSightingsAlreadyStored() throws {
        let path = directory.file("v9.db")
        let connection = try SQLiteConnection(path: path)
        try connection.execute(script: Schema.migrations.prefix(9).joined(separator: ";\n") + "; PRAGMA user_version = 9")
        let ids = Array(1...3) + Array(10...(10 + SightingBatches.maximumEntries + 4))
        try connection.transaction(.immediate) {
            for id in ids {
                let stored = sighting(UInt64(id), time: 1_000 + Int64(id))
                try connection.execute("INSERT INTO sighting (id, rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, -60, ?, 'hci0')",
                                       Int64(id), stored.rpi.bytes, stored.aem.bytes, stored.time)
            }
        }
        try connection.close()

        let store = try AgentStore(path: path)
        #expect(try store.read { try $0.fetchOne(Int.self, "PRAGMA user_version") } == Schema.migrations.count, "migrated to the latest version")
        #expect(try store.read { try $0.fetchAll(Int64.self, "SELECT entry_count FROM sighting_batch ORDER BY first_id") }
                == [3, Int64(SightingBatches.maximumEntries), 5])
        #expect(try entries(store) == rows(store) && entries(store).count == ids.count)
        #expect(try isConsistent(store))
        #expect(try store.read { try $0.fetchOne(Int.self, "SELECT count(*) FROM sqlite_master WHERE name = 'sighting_by_rpi'") } == 0)
    }

    /// Matching on the index and on a pass over the rows finds the same: RSSIs, adapters, scans.
    @Test func matchingFindsTheSameThroughTheIndex() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let device = try Broadcaster(start: 2_900_016)
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13"))
        var heard = [Sighting]()
        for number in 0..<12 {
            let time = device.start + 3_600 + Int64(number) * 40, rssi = Int8(-50 - number % 4)
            heard.append(try device.sighting(at: time, rssi: rssi, adapterAddress: number % 2 == 0 ? dongle : nil))
        }
        try store.record((0..<200).map { sighting(UInt64($0), time: device.start + Int64($0)) }, scans: [(device.start)...(device.start + 200)])
        try store.record(Array(heard[0..<6]), scans: [(device.start + 3_600)...(device.start + 3_800)])
        try store.record(Array(heard[6...]), scans: [(device.start + 3_840)...(device.start + 4_100)])
        let corrections = RssiCorrections(defaultCorrection: 2, byAdapter: [dongle: -7])
        let fromIndex = try KeyMatcher(index: try store.detectionIndex(), rssiCorrections: corrections).match(device.key)
        let fromRows = try KeyMatcher(index: try store.sightingIndex(), rssiCorrections: corrections).match(device.key)
        #expect(fromIndex != nil && fromIndex == fromRows)
        #expect(fromIndex?.sightings.count == 12)
    }

    /// Issue 56: a scan's receptions of an identifier are one row (schema v12), its first
    /// reception's RSSI and time and the others' in later_receptions, two bytes each: 15
    /// receptions of two phones in each of six scans are 12 rows, and the index, a pass over the
    /// rows and the receptions themselves match the same, to every reception's time, RSSI and
    /// previous scan (the scans cross a minute's turn).
    @Test func aScansReceptionsOfAnIdentifierAreOneRowAndMatchAsTheReceptionsDo() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let device = try Broadcaster(start: 2_900_016), stranger = try Broadcaster(start: 2_900_016)
        var heard = [Sighting](), scans = [ClosedRange<Int64>]()
        for scan in 0..<6 {
            let began = device.start + 3_600 + Int64(scan) * 300 + 58
            scans.append(began...(began + 4))
            for report in 0..<15 {
                for phone in [device, stranger] {
                    var sighting = try phone.sighting(at: began + Int64(report) / 4, rssi: report == 3 ? nil : Int8(-55 - (report * 7 + scan) % 11))
                    sighting.previousScanTime = scan > 0 ? scans[scan - 1].lowerBound : nil
                    heard.append(sighting)
                }
            }
        }
        try store.record(heard, scans: scans)
        #expect(try store.sightingCount() == 12)
        #expect(try store.read { try $0.fetchAll(Int.self, "SELECT length(later_receptions) FROM sighting") } == Array(repeating: 28, count: 12))
        #expect(try store.sightingRecords() == MergedSightings(heard).records)
        #expect(try store.sightingIndex().count == 12, "a sighting however many receptions")

        let fromIndex = try KeyMatcher(index: try store.detectionIndex()).match(device.key)
        let fromRows = try KeyMatcher(index: try store.sightingIndex()).match(device.key)
        let fromReceptions = try KeyMatcher(index: SightingIndex(heard)).match(device.key)
        #expect(fromIndex != nil && fromIndex == fromReceptions && fromRows == fromReceptions)
        #expect(fromIndex?.sightings.count == 90 && fromIndex?.sightings.filter { $0.rssi == nil }.count == 6)
        try expectDetailsAsAPassGives(store, heard)
    }

    /// `enctl detect offline --db`'s reader: the index when it agrees with the table, read in one
    /// snapshot; a pass over the rows for a stale index or an older schema, with the same sightings.
    @Test func theReadOnlyReaderUsesTheIndexOnlyWhenItAgrees() throws {
        let path = directory.file("enagent.db")
        let stored = (0..<40).map { sighting(UInt64($0), time: 3_000 + Int64($0) * 10, rssi: $0 % 4 == 0 ? nil : -66) }
        let store = try AgentStore(path: path)
        try store.record(stored, scans: [3_000...3_400])
        try store.close()

        func read(_ path: String) throws -> (usesIndex: Bool, sightings: [[IndexedSighting]]) {
            let index = try AgentDatabaseReader.sightingIndex(at: path)
            return (index.resolver != nil, try stored.map { try index.resolvedSightings(of: $0.rpi) })
        }
        let current = try read(path)
        #expect(current.usesIndex && current.sightings.allSatisfy { $0.count == 1 })

        let stale = directory.file("stale.db"), older = directory.file("v9.db")
        try FileManager.default.copyItem(atPath: path, toPath: stale)
        try FileManager.default.copyItem(atPath: path, toPath: older)
        let staleConnection = try SQLiteConnection(path: stale)
        try staleConnection.execute(script: "DELETE FROM sighting_batch")
        try staleConnection.close()
        let olderConnection = try SQLiteConnection(path: older)
        try olderConnection.execute(script: "DROP TABLE sighting_batch; CREATE INDEX sighting_by_rpi ON sighting(rpi); PRAGMA user_version = 9")
        try olderConnection.close()
        for path in [stale, older] {
            let fallback = try read(path)
            #expect(!fallback.usesIndex && fallback.sightings == current.sightings, "\(path)")
        }
    }
}
