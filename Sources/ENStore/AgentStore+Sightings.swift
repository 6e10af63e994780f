import Dispatch
import ENCore
import Foundation
import GRDB
import GRDBSQLite

extension AgentStore {
    /// Records a batch of sightings in one transaction: all of them or, on error, none.
    public func record(_ sightings: [Sighting]) throws(StoreError) {
        guard !sightings.isEmpty else { return }
        try write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, ?, ?)")
            for sighting in sightings {
                try insert.execute(arguments: [
                    Data(sighting.rpi.bytes), Data(sighting.aem.bytes), sighting.rssi.map { Int($0) },
                    sighting.time, sighting.adapter,
                ])
            }
        }
    }

    public func sightingCount() throws(StoreError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sighting") ?? 0 }
    }

    /// Every sighting, read straight into an index for matching: one pass over the table in
    /// storage order, no list of sightings held beside the index, one snapshot (the radio may
    /// record more meanwhile). The columns are read with sqlite3's API, in place: GRDB's rows
    /// cost several times more than the index itself for millions of sightings.
    public func sightingIndex() throws(StoreError) -> SightingIndex {
        try read { db in
            // Two cores at work: this thread steps sqlite3 and copies the columns out, another
            // adds them to the index (random writes into a table of up to hundreds of MB).
            let builder = IndexBuilder(expectedCount: try Int.fetchOne(db, sql: "SELECT count(*) FROM sighting") ?? 0)
            defer { builder.finish() }
            let prepared = try db.makeStatement(sql: "SELECT rpi, aem, rssi, seen_at FROM sighting")
            // GRDB finalizes the statement when `prepared` goes.
            defer { withExtendedLifetime(prepared) {} }
            let statement = prepared.sqliteStatement
            var batch = IndexBuilder.Batch()
            batch.reserveCapacity(IndexBuilder.batchSize)
            while true {
                let step = sqlite3_step(statement)
                if step == SQLITE_DONE { break }
                guard step == SQLITE_ROW else {
                    throw DatabaseError(resultCode: ResultCode(rawValue: step), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                }
                // The schema's CHECKs hold the lengths: 16 and 4 bytes.
                guard sqlite3_column_bytes(statement, 0) == 16, sqlite3_column_bytes(statement, 1) == 4,
                      let rpi = sqlite3_column_blob(statement, 0), let aem = sqlite3_column_blob(statement, 1)
                else { throw StoreError.corrupt(path: path, detail: "a sighting's RPI or AEM has the wrong length") }
                batch.append((rpi: Bytes16(UnsafeRawBufferPointer(start: rpi, count: 16)),
                              aem: AssociatedEncryptedMetadata(rawValue: UInt32(bigEndian: aem.loadUnaligned(as: UInt32.self))),
                              rssi: sqlite3_column_type(statement, 2) == SQLITE_NULL ? nil : Int8(truncatingIfNeeded: sqlite3_column_int(statement, 2)),
                              time: sqlite3_column_int64(statement, 3)))
                if batch.count == IndexBuilder.batchSize {
                    builder.add(batch)
                    batch = IndexBuilder.Batch()
                    batch.reserveCapacity(IndexBuilder.batchSize)
                }
            }
            builder.add(batch)
            return builder.finish()
        }
    }

    /// Sightings with `from <= time < until` (unix seconds), in time order.
    public func sightings(from: Int64 = 0, until: Int64 = .max) throws(StoreError) -> [Sighting] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM sighting WHERE seen_at >= ? AND seen_at < ? ORDER BY seen_at, id",
                             arguments: [from, until]).map(Self.sighting(from:))
        }
    }

    private static func sighting(from row: Row) -> Sighting {
        let rpi: Data = row["rpi"]
        let aem: Data = row["aem"]
        return Sighting(rpi: Bytes16(bytes: rpi)!, aem: AssociatedEncryptedMetadata(bytes: aem)!,
                        rssi: row["rssi"], time: row["seen_at"], adapter: row["adapter"])
    }
}

/// A sighting index filled on another thread from batches of rows: at most two batches wait,
/// so memory stays a few hundred KB beside the index.
private final class IndexBuilder: @unchecked Sendable {
    typealias Batch = [(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64)]
    static let batchSize = 4_096

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var waiting = [Batch]()
    private var closed = false
    // Written by the worker before `done` is signalled, read after waiting for it.
    private var index: SightingIndex
    private let done = DispatchSemaphore(value: 0)

    /// The worker is a thread of its own, not Dispatch's pool: on a one-core machine the pool
    /// may have no thread to spare while the reading thread waits for it.
    init(expectedCount: Int) {
        index = SightingIndex(expectedCount: expectedCount)
        Thread { self.run() }.start()
    }

    /// Hands a batch over, waiting while two are still waiting.
    func add(_ batch: Batch) {
        condition.lock()
        while waiting.count >= 2 { condition.wait() }
        waiting.append(batch)
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for every batch handed over to be in the index and returns it; later calls (the
    /// `defer` of a read that failed, or of one that returned) find the worker done already.
    @discardableResult
    func finish() -> SightingIndex {
        condition.lock()
        let first = !closed
        closed = true
        condition.broadcast()
        condition.unlock()
        if first { done.wait() }
        return index
    }

    private func run() {
        while true {
            condition.lock()
            while waiting.isEmpty && !closed { condition.wait() }
            guard !waiting.isEmpty else {
                condition.unlock()
                break
            }
            let batch = waiting.removeFirst()
            condition.broadcast()
            condition.unlock()
            for row in batch { index.add(rpi: row.rpi, aem: row.aem, rssi: row.rssi, time: row.time) }
        }
        done.signal()
    }
}
