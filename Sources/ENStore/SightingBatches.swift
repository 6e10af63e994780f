import ENCore
import ENSQLite
import Synchronization

/// The database's index of its sightings (`sighting_batch`, schema v10): for each run of
/// consecutive sighting ids, each sighting's RPI and time (its first reception's), 20 bytes an entry. It is what
/// matching's first stage needs, kept as the sightings are stored, so that a detection reads a
/// few hundred blobs instead of every sighting row; the few sightings a detection's keys find
/// are then read by id (`AgentStore.details(of:in:)`).
///
/// Written with the sightings in one transaction (`AgentStore.record`), cut with them by
/// retention, built from the sighting table by the migration and whenever it disagrees with it
/// (`isConsistent`: a database restored or edited by hand).
enum SightingBatches {
    /// Entries a row holds at most, so that retention rewrites at most 200 kB a row it cuts.
    static let maximumEntries = 10_000
    /// An entry: the RPI's 16 bytes, then the time as a little-endian UInt32.
    static let entrySize = 20

    /// Collects sightings, in the order of their ids, into rows: one per run of consecutive ids.
    struct Writer {
        private var firstID: Int64 = 0
        private var entries = [UInt8]()
        private var count = 0
        private var earliest = Int64.max, latest = Int64.min

        /// Adds sighting `id`; a row is written when `id` does not follow the last one or the row is full.
        mutating func add(id: Int64, rpi: RollingProximityIdentifier, time: Int64, in db: SQLiteConnection) throws(SQLiteError) {
            if count > 0 && (id != firstID + Int64(count) || count == SightingBatches.maximumEntries) { try finish(in: db) }
            if count == 0 {
                firstID = id
                entries.reserveCapacity(SightingBatches.maximumEntries * SightingBatches.entrySize)
            }
            let stored = SightingIndex.storedTime(time)
            rpi.withUnsafeBytes { entries.append(contentsOf: $0) }
            withUnsafeBytes(of: stored.littleEndian) { entries.append(contentsOf: $0) }
            earliest = min(earliest, Int64(stored))
            latest = max(latest, Int64(stored))
            count += 1
        }

        /// Writes the row being collected. A row already at its first id (one left by sightings
        /// deleted by hand, whose ids were given again) gives way: the counts tell the index stale.
        mutating func finish(in db: SQLiteConnection) throws(SQLiteError) {
            guard count > 0 else { return }
            try db.execute("""
                INSERT INTO sighting_batch (first_id, entry_count, earliest, latest, entries) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (first_id) DO UPDATE SET entry_count = excluded.entry_count, earliest = excluded.earliest,
                    latest = excluded.latest, entries = excluded.entries
                """, firstID, count, earliest, latest, entries)
            entries.removeAll(keepingCapacity: true)
            (count, earliest, latest) = (0, .max, .min)
        }
    }

    /// Builds the rows again from the sighting table, in one pass in id order.
    static func rebuild(in db: SQLiteConnection) throws(SQLiteError) {
        try db.execute("DELETE FROM sighting_batch")
        var writer = Writer()
        try db.forEachRow("SELECT id, rpi, seen_at FROM sighting ORDER BY id") { row throws(SQLiteError) in
            try writer.add(id: row.int64(0), rpi: try row.bytes16(1), time: row.int64(2), in: db)
        }
        try writer.finish(in: db)
    }

    /// Whether the rows hold every sighting: as many entries as the table counts, and its
    /// largest id. Cheap: the count is the database's own, the largest id the end of the table's
    /// B-tree, and the sum reads each row's integers, not its blob.
    static func isConsistent(in db: SQLiteConnection) throws(SQLiteError) -> Bool {
        let state = try db.fetchAll("""
            SELECT (SELECT sightings FROM sighting_count), (SELECT coalesce(max(id), 0) FROM sighting),
                   (SELECT coalesce(sum(entry_count), 0) FROM sighting_batch),
                   (SELECT coalesce(max(first_id + entry_count - 1), 0) FROM sighting_batch)
            """) { row throws(SQLiteError) in (row.int64(0), row.int64(1), row.int64(2), row.int64(3)) }
        guard let (count, largestID, entries, largestEntry) = state.first else { return false }
        return count == entries && largestID == largestEntry
    }

    /// Drops the entries of sightings older than `cutoff` (retention deletes their rows in the
    /// same transaction): rows wholly older go, rows partly older are written again with the
    /// entries kept, one row per run of consecutive ids left. The entries carry their times,
    /// so the cut is exact. (The database overwrites what it frees: `secure_delete`.)
    static func purge(before cutoff: Int64, in db: SQLiteConnection) throws(SQLiteError) {
        try db.execute("DELETE FROM sighting_batch WHERE latest < ?", cutoff)
        let straddling = try db.fetchAll("SELECT first_id, entries FROM sighting_batch WHERE earliest < ?", cutoff) { row throws(SQLiteError) in
            (first: row.int64(0), entries: try row.column(1) as [UInt8])
        }
        for row in straddling {
            try db.execute("DELETE FROM sighting_batch WHERE first_id = ?", row.first)
            let kept = row.entries.withUnsafeBytes { entries in
                (0..<entries.count / entrySize).map { (id: row.first + Int64($0), entry: Self.entry($0, of: entries)) }.filter { $0.entry.time >= cutoff }
            }
            var writer = Writer()
            for sighting in kept { try writer.add(id: sighting.id, rpi: sighting.entry.rpi, time: sighting.entry.time, in: db) }
            try writer.finish(in: db)
        }
    }

    /// Entry `number` of a row's blob.
    @inline(__always)
    static func entry(_ number: Int, of entries: UnsafeRawBufferPointer) -> (rpi: RollingProximityIdentifier, time: Int64) {
        let offset = number * entrySize
        return (Bytes16(entries, offset: offset), Int64(UInt32(littleEndian: entries.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self))))
    }

    /// Every entry, read into an index whose sightings `resolver` reads by id. The rows in id
    /// order, as a pass over the sighting table would give them, so that the index's table is
    /// laid out as such a pass lays it out.
    static func index(in db: SQLiteConnection, resolver: any SightingResolver) throws(SQLiteError) -> SightingIndex {
        var index = SightingIndex(expectedCount: try db.fetchOne(Int.self, "SELECT sightings FROM sighting_count") ?? 0, resolver: resolver)
        try db.forEachRow("SELECT first_id, entry_count, entries FROM sighting_batch ORDER BY first_id") { row throws(SQLiteError) in
            let first = row.int64(0), count = row.int64(1)
            guard let entries = row.blob(2), count >= 0, entries.count == Int(count) * entrySize else {
                throw .mismatch("the sighting batch at id \(first) does not hold \(count) entries", sql: row.sql)
            }
            for number in 0..<Int(count) {
                let (rpi, time) = entry(number, of: entries)
                index.add(rpi: rpi, time: time, reference: first + Int64(number))
            }
        }
        return index
    }
}

extension AgentStore {
    /// The sightings as a detection matches them: their RPIs and times read from the index the
    /// database keeps of them (built again first when it disagrees with the sighting table,
    /// which takes a pass over it), and, for the few sightings a detection's keys find, the rest
    /// read by id, each time in a snapshot of its own (a sighting deleted meanwhile by retention
    /// no longer counts). A detection steps through no sighting row.
    public func detectionIndex() throws(StoreError) -> SightingIndex {
        let resolver = StoredSightings(store: self)
        if let index = try read({ db in try SightingBatches.isConsistent(in: db) ? try SightingBatches.index(in: db, resolver: resolver) : nil }) {
            return index
        }
        return try write { db in
            if !(try SightingBatches.isConsistent(in: db)) { try SightingBatches.rebuild(in: db) }
            return try SightingBatches.index(in: db, resolver: resolver)
        }
    }

    /// What matching weighs each of `sightings` by, from its row in `db` (a database of schema
    /// `version`, v10 or later): nil for one whose row is gone or holds another RPI. Each
    /// reception's previous scan is that of `ScanHistory`, as a pass over the table gives it.
    static func details(of sightings: [SightingReference], in db: SQLiteConnection, version: Int) throws -> [SightingDetails?] {
        var scans = ScanHistory(try Self.scans(in: db))
        var found = [SightingDetails?]()
        found.reserveCapacity(sightings.count)
        let laterReceptions = version >= Schema.laterReceptionsVersion ? "later_receptions" : "NULL"
        for sighting in sightings {
            var details: SightingDetails?
            try db.forEachRow("SELECT aem, rssi, seen_at, adapter_address, \(laterReceptions) FROM sighting WHERE id = ? AND rpi = ?",
                              [sighting.reference, sighting.rpi.bytes]) { row throws(SQLiteError) in
                let first = row.int64(2)
                details = SightingDetails(aem: try row.metadata(0), adapterAddress: try row.adapterAddress(3),
                                          receptions: try row.receptions(rssi: 1, later: 4).map { reception in
                                              let time = first + Int64(reception.secondsAfterFirst)
                                              return SightingDetails.Reception(reception, scanGap: ScanGap(time: time, previousScanTime: scans.previousScanStart(forSightingAt: time)))
                                          })
            }
            found.append(details)
        }
        return found
    }
}

/// The daemon's sightings' details, read through the store.
struct StoredSightings: SightingResolver {
    let store: AgentStore

    func details(of sightings: [SightingReference]) throws -> [SightingDetails?] {
        try store.read { db in try AgentStore.details(of: sightings, in: db, version: Schema.migrations.count) }
    }
}

/// The details of sightings of a database read by someone else (`AgentDatabaseReader`): its
/// connection kept in the read transaction its index was read in, so that what a detection
/// finds is read from the same snapshot; the transaction ends, and the connection closes, with
/// the index.
final class SnapshotSightings: SightingResolver {
    private let connection: Mutex<SQLiteConnection>
    /// The database's schema version.
    private let version: Int

    init(_ connection: SQLiteConnection, version: Int) {
        self.connection = Mutex(connection)
        self.version = version
    }

    func details(of sightings: [SightingReference]) throws -> [SightingDetails?] {
        try connection.withLock { connection in try AgentStore.details(of: sightings, in: connection, version: version) }
    }

    deinit {
        connection.withLock { connection in
            try? connection.execute(script: "COMMIT")
            try? connection.close()
        }
    }
}
