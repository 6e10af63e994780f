import ENCore
import Foundation
import GRDB

extension AgentStore {
    /// The device's own TEK for the rolling period starting at `start`, if one was made.
    public func temporaryExposureKey(startingAt start: ENIntervalNumber) throws(StoreError) -> TemporaryExposureKey? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM temporary_exposure_key WHERE rolling_start_interval_number = ?",
                             arguments: [start.rawValue]).map(Self.key(from:))
        }
    }

    /// Stores `key` unless a key for its rolling period exists, and returns the stored one.
    /// Two racing callers therefore agree on a single key for the day.
    public func insertTemporaryExposureKeyIfAbsent(_ key: TemporaryExposureKey, createdAt: Int64) throws(StoreError) -> TemporaryExposureKey {
        try write { db in
            try db.execute(sql: """
                INSERT INTO temporary_exposure_key
                    (rolling_start_interval_number, key_data, rolling_period, transmission_risk_level, created_at)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT (rolling_start_interval_number) DO NOTHING
                """, arguments: [key.rollingStartIntervalNumber.rawValue, Data(key.keyData.bytes), key.rollingPeriod,
                                 key.transmissionRiskLevel, createdAt])
            let row = try Row.fetchOne(db, sql: "SELECT * FROM temporary_exposure_key WHERE rolling_start_interval_number = ?",
                                       arguments: [key.rollingStartIntervalNumber.rawValue])
            return Self.key(from: row!)
        }
    }

    /// The device's keys whose validity reaches past `cutoff` (unix seconds), oldest first.
    public func temporaryExposureKeys(validAfter cutoff: Int64) throws(StoreError) -> [TemporaryExposureKey] {
        try read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM temporary_exposure_key WHERE \(Self.keyValidityEnd) > ?
                ORDER BY rolling_start_interval_number
                """, arguments: [cutoff]).map(Self.key(from:))
        }
    }

    /// Unix seconds at which a stored key stops being valid.
    static let keyValidityEnd = "(rolling_start_interval_number + rolling_period) * \(ENIntervalNumber.secondsPerInterval)"

    private static func key(from row: Row) -> TemporaryExposureKey {
        let keyData: Data = row["key_data"]
        return TemporaryExposureKey(
            keyData: Bytes16(bytes: keyData)!,
            rollingStartIntervalNumber: ENIntervalNumber(row["rolling_start_interval_number"] as UInt32),
            rollingPeriod: row["rolling_period"],
            transmissionRiskLevel: row["transmission_risk_level"])
    }
}
