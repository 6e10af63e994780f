import ENCore
import Foundation
import GRDB

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
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM temporary_exposure_key WHERE rolling_start_interval_number = ?",
                                         arguments: [start.rawValue]) ?? 0
            guard count < limit, lastInterval.rawValue >= start.rawValue else { return nil }
            try db.execute(sql: """
                UPDATE temporary_exposure_key SET rolling_period = min(rolling_period, ?)
                WHERE id = (SELECT max(id) FROM temporary_exposure_key WHERE rolling_start_interval_number = ?)
                """, arguments: [lastInterval.rawValue - start.rawValue + 1, start.rawValue])
            try Self.insert(replacement, createdAt: createdAt, db)
            return replacement
        }
    }

    /// The device's keys whose validity reaches past `cutoff` (unix seconds), oldest first.
    public func temporaryExposureKeys(validAfter cutoff: Int64) throws(StoreError) -> [TemporaryExposureKey] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM temporary_exposure_key WHERE \(Self.keyValidityEnd) > ?
                ORDER BY rolling_start_interval_number, id
                """, arguments: [cutoff]).map(Self.key(from:))
        }
    }

    /// Unix seconds at which a stored key stops being valid.
    static let keyValidityEnd = "(rolling_start_interval_number + rolling_period) * \(ENIntervalNumber.secondsPerInterval)"

    private static func currentKey(_ db: Database, startingAt start: ENIntervalNumber) throws -> TemporaryExposureKey? {
        try Row.fetchOne(db, sql: "SELECT * FROM temporary_exposure_key WHERE rolling_start_interval_number = ? ORDER BY id DESC LIMIT 1",
                         arguments: [start.rawValue]).map(Self.key(from:))
    }

    private static func insert(_ key: TemporaryExposureKey, createdAt: Int64, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO temporary_exposure_key (rolling_start_interval_number, key_data, rolling_period, transmission_risk_level, created_at)
            VALUES (?, ?, ?, ?, ?)
            """, arguments: [key.rollingStartIntervalNumber.rawValue, Data(key.keyData.bytes), key.rollingPeriod,
                             key.transmissionRiskLevel, createdAt])
    }

    private static func key(from row: Row) -> TemporaryExposureKey {
        let keyData: Data = row["key_data"]
        return TemporaryExposureKey(
            keyData: Bytes16(bytes: keyData)!,
            rollingStartIntervalNumber: ENIntervalNumber(row["rolling_start_interval_number"] as UInt32),
            rollingPeriod: row["rolling_period"],
            transmissionRiskLevel: row["transmission_risk_level"])
    }
}
