import Foundation
import GRDB

extension AgentStore {
    // MARK: Settings

    public func setting(_ name: String) throws(StoreError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM setting WHERE name = ?", arguments: [name]) }
    }

    /// Sets `name` to `value`; nil removes it.
    public func setSetting(_ name: String, to value: String?) throws(StoreError) {
        try write { db in
            if let value {
                try db.execute(sql: "INSERT INTO setting (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                               arguments: [name, value])
            } else {
                try db.execute(sql: "DELETE FROM setting WHERE name = ?", arguments: [name])
            }
        }
    }

    // MARK: Consent

    public func recordConsent(_ event: ConsentEvent) throws(StoreError) {
        try write { db in
            try db.execute(sql: "INSERT INTO consent_event (granted, recorded_at) VALUES (?, ?)",
                           arguments: [event.granted, event.recordedAt])
        }
    }

    /// The latest consent decision, or nil if the person was never asked.
    public func currentConsent() throws(StoreError) -> ConsentEvent? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT granted, recorded_at FROM consent_event ORDER BY id DESC LIMIT 1")
                .map { ConsentEvent(granted: $0["granted"], recordedAt: $0["recorded_at"]) }
        }
    }

    // MARK: Processed key files

    /// Whether a key file with this SHA-256 was already matched.
    public func hasProcessedKeyFile(sha256: [UInt8]) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM key_file WHERE sha256 = ?)", arguments: [Data(sha256)]) ?? false
        }
    }

    public func recordProcessedKeyFile(_ file: ProcessedKeyFile, at time: Int64) throws(StoreError) {
        try write { db in try Self.insert(file, at: time, in: db) }
    }

    static func insert(_ file: ProcessedKeyFile, at time: Int64, in db: Database) throws {
        try db.execute(sql: """
            INSERT INTO key_file (sha256, name, region, key_count, processed_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (sha256) DO NOTHING
            """, arguments: [Data(file.sha256), file.name, file.region, file.keyCount, time])
    }

    // MARK: Retention

    /// Deletes keys, sightings and exposure windows older than `policy` allows at `now`.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy, now: Int64) throws(StoreError) -> RetentionReport {
        let cutoff = policy.cutoff(now: now)
        return try write { db in
            try db.execute(sql: "DELETE FROM temporary_exposure_key WHERE \(Self.keyValidityEnd) <= ?", arguments: [cutoff])
            let keys = db.changesCount
            try db.execute(sql: "DELETE FROM sighting WHERE seen_at < ?", arguments: [cutoff])
            let sightings = db.changesCount
            // A window's day is its UTC midnight: it goes once the whole day is past the cutoff.
            try db.execute(sql: "DELETE FROM exposure_window WHERE day + 86400 <= ?", arguments: [cutoff])
            let windows = db.changesCount
            return RetentionReport(temporaryExposureKeys: keys, sightings: sightings, exposureWindows: windows)
        }
    }
}

/// A diagnosis key file that was matched, remembered by its SHA-256 so it is never matched twice.
public struct ProcessedKeyFile: Sendable, Equatable {
    public var sha256: [UInt8]
    public var name: String
    public var region: String?
    public var keyCount: Int

    public init(sha256: [UInt8], name: String, region: String?, keyCount: Int) {
        self.sha256 = sha256
        self.name = name
        self.region = region
        self.keyCount = keyCount
    }
}
