import ENCore
import ENSQLite

extension AgentStore {
    /// The device's current TEK for the day starting at `start` (the newest of its keys), if one was made.
    public func temporaryExposureKey(startingAt start: ENIntervalNumber) throws(StoreError) -> TemporaryExposureKey? {
        try read { db in try Self.currentKey(db, startingAt: start) }
    }

    /// Stores `key` unless its day has a key already, and returns the day's current key.
    /// Two racing callers therefore agree on a single key for the day.
    public func insertTemporaryExposureKeyIfAbsent(_ key: TemporaryExposureKey, createdAt: Int64) throws(StoreError) -> TemporaryExposureKey {
        try write { db in
            if let existing = try Self.currentKey(db, startingAt: key.rollingStartIntervalNumber) { return existing }
            try Self.insert(key, createdAt: createdAt, db)
            return key
        }
    }

    /// Ends the day's current key after `lastInterval` and makes `replacement` (same rolling start)
    /// the day's current key, in one transaction, unless the day has `limit` keys already: then
    /// nil, and nothing changes.
    public func rollTemporaryExposureKey(endingAfter lastInterval: ENIntervalNumber, to replacement: TemporaryExposureKey,
                                         createdAt: Int64, limit: Int) throws(StoreError) -> TemporaryExposureKey? {
        try write { db in
            let start = replacement.rollingStartIntervalNumber
            let count = try db.fetchOne(Int.self, "SELECT count(*) FROM temporary_exposure_key WHERE rolling_start_interval_number = ?",
                                        start.rawValue) ?? 0
            guard count < limit, lastInterval.rawValue >= start.rawValue else { return nil }
            try db.execute("""
                UPDATE temporary_exposure_key SET rolling_period = min(rolling_period, ?)
                WHERE id = (SELECT max(id) FROM temporary_exposure_key WHERE rolling_start_interval_number = ?)
                """, lastInterval.rawValue - start.rawValue + 1, start.rawValue)
            try Self.insert(replacement, createdAt: createdAt, db)
            return replacement
        }
    }

    /// The device's keys whose validity reaches past `cutoff` (unix seconds), oldest first.
    public func temporaryExposureKeys(validAfter cutoff: Int64) throws(StoreError) -> [TemporaryExposureKey] {
        try read { db in
            try db.fetchAll("""
                SELECT \(Self.keyColumns) FROM temporary_exposure_key WHERE \(Self.keyValidityEnd) > ?
                ORDER BY rolling_start_interval_number, id
                """, cutoff, row: Self.key(from:))
        }
    }

    /// Unix seconds at which a stored key stops being valid.
    static let keyValidityEnd = "(rolling_start_interval_number + rolling_period) * \(ENIntervalNumber.secondsPerInterval)"

    private static func currentKey(_ db: SQLiteConnection, startingAt start: ENIntervalNumber) throws(SQLiteError) -> TemporaryExposureKey? {
        try db.fetchAll("SELECT \(keyColumns) FROM temporary_exposure_key WHERE rolling_start_interval_number = ? ORDER BY id DESC LIMIT 1",
                        start.rawValue, row: key(from:)).first
    }

    private static func insert(_ key: TemporaryExposureKey, createdAt: Int64, _ db: SQLiteConnection) throws(SQLiteError) {
        try db.execute("""
            INSERT INTO temporary_exposure_key (rolling_start_interval_number, key_data, rolling_period, transmission_risk_level, created_at)
            VALUES (?, ?, ?, ?, ?)
            """, key.rollingStartIntervalNumber.rawValue, key.keyData.bytes, key.rollingPeriod, key.transmissionRiskLevel, createdAt)
    }

    private static let keyColumns = "key_data, rolling_start_interval_number, rolling_period, transmission_risk_level"

    private static func key(from row: SQLiteStatement) throws(SQLiteError) -> TemporaryExposureKey {
        TemporaryExposureKey(keyData: try row.bytes16(0), rollingStartIntervalNumber: ENIntervalNumber(try row.column(1, as: UInt32.self)),
                             rollingPeriod: try row.column(2), transmissionRiskLevel: try row.column(3))
    }
}
