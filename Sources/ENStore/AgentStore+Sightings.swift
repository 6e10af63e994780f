import Dispatch
import ENCore
import ENSQLite
import Synchronization

extension AgentStore {
    /// Records receptions, merged into sightings (`MergedSightings`: an identifier's receptions
    /// by one adapter within Google's scan cycle of 25.5 s are one), and the device's scans, as
    /// `record(_:scans:)` of merged sightings does.
    public func record(_ sightings: [Sighting], scans: [ClosedRange<Int64>] = []) throws(StoreError) {
        try record(MergedSightings(sightings), scans: scans)
    }

    /// Records sightings, one row each with all its receptions, and the device's scans in one
    /// transaction, all of them or on error none: `scans`, each from its start to its end as far
    /// as it went (a scan recorded again with the same start gets the later end), also those that
    /// heard nothing, so that no sighting is stored without the scan it was heard in. Refused while
    /// the disk has less free than its reserve.
    public func record(_ sightings: MergedSightings, scans: [ClosedRange<Int64>] = []) throws(StoreError) {
        guard !sightings.isEmpty || !scans.isEmpty else { return }
        try checkDiskReserve()
        try write { db in
            // What matching needs of them goes into the database's index of sightings in the
            // same transaction: no process killed in between can store the one without the other.
            var batches = SightingBatches.Writer()
            for record in sightings.records {
                try db.execute("""
                    INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter, adapter_address, later_receptions) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, record.rpi.bytes, record.aem.bytes, record.receptions[0].rssi, record.time, record.adapter,
                    record.adapterAddress.map { Int64($0.rawValue) }, LaterReceptions.column(of: record))
                try batches.add(id: db.lastInsertedRowID, rpi: record.rpi, time: record.time, in: db)
            }
            try batches.finish(in: db)
            for scan in scans {
                try db.execute("""
                    INSERT INTO scan (started_at, ended_at) VALUES (?, ?)
                    ON CONFLICT (started_at) DO UPDATE SET ended_at = max(ended_at, excluded.ended_at)
                    """, scan.lowerBound, scan.upperBound)
            }
        }
        if !sightings.isEmpty { sightingsWereRecorded() }
    }

    /// The device's recorded scans, by start.
    public func scans() throws(StoreError) -> [ClosedRange<Int64>] {
        try read { db in try Self.scans(in: db) }
    }

    static func scans(in db: SQLiteConnection) throws -> [ClosedRange<Int64>] {
        try db.fetchAll("SELECT started_at, ended_at FROM scan ORDER BY started_at") { row throws(SQLiteError) in
            let start: Int64 = try row.column(0), end: Int64 = try row.column(1)
            return start...max(start, end)
        }
    }

    public func sightingCount() throws(StoreError) -> Int {
        try read { db in try Self.sightingCount(in: db, version: Schema.migrations.count) }
    }

    /// The sightings in `db`, a database of schema `version`: its own count, or one older than
    /// the count (`Schema.sightingCountVersion`) counted row by row.
    static func sightingCount(in db: SQLiteConnection, version: Int) throws -> Int {
        let query = version >= Schema.sightingCountVersion ? "SELECT sightings FROM sighting_count" : "SELECT count(*) FROM sighting"
        return try db.fetchOne(Int.self, query) ?? 0
    }

    /// The stored sightings counted per UTC hour (of their first reception), from the hour `since`
    /// (unix seconds) falls in, oldest first; hours without a sighting are left out. Only counts
    /// leave the store: when people were near, never who.
    public func sightingsPerHour(since: Int64 = 0) throws(StoreError) -> [SightingHour] {
        try read { db in
            try db.fetchAll("""
                SELECT seen_at - seen_at % 3600 AS hour, count(*), count(DISTINCT rpi) FROM sighting
                WHERE seen_at >= ? GROUP BY hour ORDER BY hour
                """, since - since % 3600) { row throws(SQLiteError) in
                SightingHour(start: try row.column(0), sightings: try row.column(1), distinctIdentifiers: try row.column(2))
            }
        }
    }

    /// Every sighting with all its details, read straight into an index that holds them, each
    /// reception an entry: one pass over the table in storage order, no list of sightings held
    /// beside the index, one snapshot (the radio may record more meanwhile). The columns are read
    /// in place, from sqlite3's own row. A detection reads `detectionIndex()` instead, which steps
    /// through no row.
    public func sightingIndex() throws(StoreError) -> SightingIndex {
        try read { db in try Self.sightingIndex(in: db, version: Schema.migrations.count) }
    }

    /// The index of every sighting in `db`, a database of schema `version`, each reception with
    /// the start of the scan before its own (`ScanHistory`); one older than the adapters'
    /// addresses (Schema.adapterAddressVersion) has none to read, one older than the scans
    /// (Schema.scanVersion) no scans: their previous scans are unknown; one older than the later
    /// receptions (Schema.laterReceptionsVersion) a reception a sighting.
    static func sightingIndex(in db: SQLiteConnection, version: Int) throws -> SightingIndex {
        let withAdapterAddresses = version >= Schema.adapterAddressVersion, withLaterReceptions = version >= Schema.laterReceptionsVersion
        var scans = ScanHistory(version >= Schema.scanVersion ? try Self.scans(in: db) : [])
        // Two cores at work: this thread steps sqlite3 and copies the columns out, another
        // adds them to the index (random writes into a table of up to hundreds of MB).
        let builder = IndexBuilder(expectedCount: try sightingCount(in: db, version: version))
        defer { builder.finish() }
        var batch = IndexBuilder.Batch()
        batch.reserveCapacity(IndexBuilder.batchSize)
        let columns = "rpi, aem, rssi, seen_at, \(withAdapterAddresses ? "adapter_address" : "NULL"), \(withLaterReceptions ? "later_receptions" : "NULL")"
        try db.forEachRow("SELECT \(columns) FROM sighting") { row throws(SQLiteError) in
            let rpi = try row.bytes16(0), aem = try row.metadata(1), first = row.int64(3), adapterAddress = try row.adapterAddress(4)
            var later = false
            try row.forEachReception(rssi: 2, later: 5) { reception throws(SQLiteError) in
                let time = first + Int64(reception.secondsAfterFirst)
                batch.append((rpi: rpi, aem: aem, rssi: reception.rssi, time: time, adapterAddress: adapterAddress,
                              previousScanTime: scans.previousScanStart(forSightingAt: time), ofTheLastSighting: later))
                later = true
            }
            if batch.count >= IndexBuilder.batchSize {
                builder.add(batch)
                batch = IndexBuilder.Batch()
                batch.reserveCapacity(IndexBuilder.batchSize)
            }
        }
        builder.add(batch)
        return builder.finish()
    }

    /// The sightings whose first reception was at `from <= time < until` (unix seconds), in time order.
    public func sightingRecords(from: Int64 = 0, until: Int64 = .max) throws(StoreError) -> [SightingRecord] {
        try read { db in
            try db.fetchAll("""
                SELECT rpi, aem, rssi, seen_at, adapter, adapter_address, later_receptions FROM sighting
                WHERE seen_at >= ? AND seen_at < ? ORDER BY seen_at, id
                """, from, until) { row throws(SQLiteError) in
                SightingRecord(rpi: try row.bytes16(0), aem: try row.metadata(1), time: try row.column(3), adapter: try row.column(4),
                               adapterAddress: try row.adapterAddress(5), receptions: try row.receptions(rssi: 2, later: 6))
            }
        }
    }
}

/// One hour's sightings: how many, and how many rolling proximity identifiers among them (about
/// how many devices: each changes its identifier every 10 to 20 minutes).
public struct SightingHour: Sendable, Equatable {
    /// Unix seconds of the hour's start (UTC).
    public var start: Int64
    public var sightings: Int
    public var distinctIdentifiers: Int

    public init(start: Int64, sightings: Int, distinctIdentifiers: Int) {
        (self.start, self.sightings, self.distinctIdentifiers) = (start, sightings, distinctIdentifiers)
    }
}

/// A sighting index filled on another thread from batches of rows: at most two batches wait,
/// so memory stays a few hundred KB beside the index.
private final class IndexBuilder: Sendable {
    /// Receptions, each with `ofTheLastSighting` when it is a later one of the sighting before it.
    typealias Batch = [(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64, adapterAddress: BluetoothAddress?,
                        previousScanTime: Int64?, ofTheLastSighting: Bool)]
    static let batchSize = 4_096

    /// What the reading thread and the worker share.
    private final class Handover: Sendable {
        /// Batches handed over and not yet added; nil after the last one.
        let waiting = Mutex<[Batch?]>([])
        let freeSlots = DispatchSemaphore(value: 2)
        let waitingBatches = DispatchSemaphore(value: 0)
        /// The worker's index, handed back when it ends.
        let result = Mutex<SightingIndex?>(nil)
    }

    private let handover = Handover()
    private let closed = Atomic<Bool>(false)
    private let worker: DedicatedThread

    init(expectedCount: Int) {
        let handover = handover
        worker = DedicatedThread {
            var index = SightingIndex(expectedCount: expectedCount)
            while true {
                handover.waitingBatches.wait()
                guard let batch = handover.waiting.withLock({ $0.removeFirst() }) else { break }
                handover.freeSlots.signal()
                for row in batch {
                    index.add(rpi: row.rpi, aem: row.aem, rssi: row.rssi, time: row.time, adapterAddress: row.adapterAddress,
                              previousScanTime: row.previousScanTime, ofTheLastSighting: row.ofTheLastSighting)
                }
            }
            handover.result.withLock { $0 = index }
        }
    }

    /// Hands a batch over, waiting while two are still waiting.
    func add(_ batch: Batch) {
        handover.freeSlots.wait()
        handover.waiting.withLock { $0.append(batch) }
        handover.waitingBatches.signal()
    }

    /// Waits for every batch handed over to be in the index and returns it; later calls (the
    /// `defer` of a read that failed, or of one that returned) find the worker done already.
    @discardableResult
    func finish() -> SightingIndex {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            handover.waiting.withLock { $0.append(nil) }
            handover.waitingBatches.signal()
            worker.join()
        }
        return handover.result.withLock { $0 } ?? SightingIndex()
    }
}
