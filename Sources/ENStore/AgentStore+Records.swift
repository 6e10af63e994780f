import ENSQLite

extension AgentStore {
    // MARK: Settings

    public func setting(_ name: String) throws(StoreError) -> String? {
        try read { db in try db.fetchOne(String.self, "SELECT value FROM setting WHERE name = ?", name) }
    }

    /// Sets `name` to `value`; nil removes it.
    public func setSetting(_ name: String, to value: String?) throws(StoreError) {
        try write { db in try Self.setSetting(name, to: value, in: db) }
    }

    /// Sets `name` to `value` unless another write holds the store; false then, and nothing is set.
    public func setSettingUnlessBusy(_ name: String, to value: String?) throws(StoreError) -> Bool {
        try writeUnlessBusy { db in try Self.setSetting(name, to: value, in: db) } != nil
    }

    private static func setSetting(_ name: String, to value: String?, in db: SQLiteConnection) throws {
        if let value {
            try db.execute("INSERT INTO setting (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", name, value)
        } else {
            try db.execute("DELETE FROM setting WHERE name = ?", name)
        }
    }

    // MARK: Consent

    public func recordConsent(_ event: ConsentEvent) throws(StoreError) {
        try write { db in
            try db.execute("INSERT INTO consent_event (granted, recorded_at) VALUES (?, ?)", event.granted, event.recordedAt)
        }
    }

    /// The latest consent decision, or nil if the person was never asked.
    public func currentConsent() throws(StoreError) -> ConsentEvent? {
        try read { db in
            try db.fetchAll("SELECT granted, recorded_at FROM consent_event ORDER BY id DESC LIMIT 1") { row throws(SQLiteError) in
                ConsentEvent(granted: try row.column(0), recordedAt: try row.column(1))
            }.first
        }
    }

    // MARK: Processed key files

    /// Whether a key file with this SHA-256 was already matched.
    public func hasProcessedKeyFile(sha256: [UInt8]) throws(StoreError) -> Bool {
        try read { db in
            try db.fetchOne(Bool.self, "SELECT EXISTS (SELECT 1 FROM key_file WHERE sha256 = ?)", sha256) ?? false
        }
    }

    public func recordProcessedKeyFile(_ file: ProcessedKeyFile, at time: Int64) throws(StoreError) {
        try write { db in try Self.insert(file, at: time, in: db) }
    }

    static func insert(_ file: ProcessedKeyFile, at time: Int64, in db: SQLiteConnection) throws(SQLiteError) {
        try db.execute("""
            INSERT INTO key_file (sha256, name, region, key_count, processed_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (sha256) DO NOTHING
            """, file.sha256, file.name, file.region, file.keyCount, time)
    }

    // MARK: Retention

    /// Deletes keys, sightings, exposure windows and v1 records older than `policy` allows at `now`.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy, now: Int64) throws(StoreError) -> RetentionReport {
        let cutoff = policy.cutoff(now: now)
        return try write { db in
            try db.execute("DELETE FROM temporary_exposure_key WHERE \(Self.keyValidityEnd) <= ?", cutoff)
            let keys = db.changes
            // A sighting goes whole, by its first reception (the others follow within 25 s).
            try db.execute("DELETE FROM sighting WHERE seen_at < ?", cutoff)
            let sightings = db.changes
            try SightingBatches.purge(before: cutoff, in: db)
            // The scan before the oldest sighting's own stays: that sighting is weighed by it.
            try db.execute("DELETE FROM scan WHERE started_at < (SELECT max(started_at) FROM scan WHERE started_at < ?)", cutoff)
            // A window's day is its UTC midnight: it goes once the whole day is past the cutoff.
            try db.execute("DELETE FROM exposure_window WHERE day + 86400 <= ?", cutoff)
            let windows = db.changes
            // A key's v1 record goes whole once the day of its last sighting is past the cutoff:
            // never before the last of its windows.
            try db.execute("DELETE FROM v1_key WHERE day + 86400 <= ?", cutoff)
            return RetentionReport(temporaryExposureKeys: keys, sightings: sightings, exposureWindows: windows, v1Keys: db.changes)
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
