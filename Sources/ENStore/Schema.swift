import ENSQLite

/// The versioned schema, its version in `PRAGMA user_version`. Migrations are append-only: a
/// released one is never edited; migration n brings a database from version n - 1 to n.
enum Schema {
    static let migrations = [
        """
        CREATE TABLE temporary_exposure_key (
            rolling_start_interval_number INTEGER PRIMARY KEY
                CHECK (rolling_start_interval_number BETWEEN 0 AND 4294967295),
            key_data BLOB NOT NULL UNIQUE CHECK (length(key_data) = 16),
            rolling_period INTEGER NOT NULL CHECK (rolling_period BETWEEN 1 AND 144),
            transmission_risk_level INTEGER NOT NULL DEFAULT 0 CHECK (transmission_risk_level BETWEEN 0 AND 8),
            created_at INTEGER NOT NULL
        );

        -- rssi NULL: the controller reported none.
        CREATE TABLE sighting (
            id INTEGER PRIMARY KEY,
            rpi BLOB NOT NULL CHECK (length(rpi) = 16),
            aem BLOB NOT NULL CHECK (length(aem) = 4),
            rssi INTEGER CHECK (rssi BETWEEN -128 AND 126),
            seen_at INTEGER NOT NULL CHECK (seen_at >= 0),
            adapter TEXT NOT NULL
        );
        CREATE INDEX sighting_by_rpi ON sighting(rpi);
        CREATE INDEX sighting_by_time ON sighting(seen_at);

        -- Diagnosis key files already checked, by content, so each is matched once.
        CREATE TABLE key_file (
            sha256 BLOB PRIMARY KEY CHECK (length(sha256) = 32),
            name TEXT NOT NULL,
            region TEXT,
            key_count INTEGER NOT NULL CHECK (key_count >= 0),
            processed_at INTEGER NOT NULL
        );

        CREATE TABLE exposure_detection (
            id INTEGER PRIMARY KEY,
            started_at INTEGER NOT NULL,
            finished_at INTEGER,
            key_file_count INTEGER NOT NULL DEFAULT 0,
            matched_key_count INTEGER NOT NULL DEFAULT 0,
            error TEXT
        );
        -- day: unix seconds of the UTC midnight the window falls on.
        CREATE TABLE exposure_window (
            id INTEGER PRIMARY KEY,
            detection_id INTEGER NOT NULL REFERENCES exposure_detection(id) ON DELETE CASCADE,
            day INTEGER NOT NULL,
            report_type INTEGER NOT NULL,
            infectiousness INTEGER NOT NULL,
            calibration_confidence INTEGER NOT NULL,
            key_data BLOB NOT NULL CHECK (length(key_data) = 16),
            rolling_start_interval_number INTEGER NOT NULL,
            rolling_period INTEGER NOT NULL,
            transmission_risk_level INTEGER NOT NULL,
            days_since_onset_of_symptoms INTEGER
        );
        CREATE INDEX exposure_window_by_detection ON exposure_window(detection_id);
        CREATE TABLE scan_instance (
            window_id INTEGER NOT NULL REFERENCES exposure_window(id) ON DELETE CASCADE,
            min_attenuation INTEGER NOT NULL,
            typical_attenuation INTEGER NOT NULL,
            seconds_since_last_scan INTEGER NOT NULL
        );
        CREATE INDEX scan_instance_by_window ON scan_instance(window_id);

        CREATE TABLE setting (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        -- Every grant or withdrawal of consent, newest last: the latest row is the state.
        CREATE TABLE consent_event (
            id INTEGER PRIMARY KEY,
            granted BOOLEAN NOT NULL,
            recorded_at INTEGER NOT NULL
        );

        CREATE TABLE test_result (
            id TEXT PRIMARY KEY,
            test_date INTEGER NOT NULL,
            verification_method TEXT NOT NULL,
            verification_detail TEXT,
            recorded_at INTEGER NOT NULL,
            shared_at INTEGER
        );
        """,
        // v2: the verification server's token for a test result, and uploads waiting to be sent.
        """
        ALTER TABLE test_result ADD COLUMN verification_token TEXT;
        CREATE TABLE pending_upload (
            test_result_id TEXT PRIMARY KEY REFERENCES test_result(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            body TEXT NOT NULL,
            queued_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        """,
        // v3: a day may have several keys (up to KeySchedule.maximumKeysPerDay): when the agent
        // must put a new identifier on the air within an interval whose RPI went out already
        // (after a restart), it ends the day's key there and rolls to a fresh one, as EN v1.5's
        // same-day release does. The keys of a day share their rolling start.
        """
        CREATE TABLE temporary_exposure_key_v3 (
            id INTEGER PRIMARY KEY,
            rolling_start_interval_number INTEGER NOT NULL
                CHECK (rolling_start_interval_number BETWEEN 0 AND 4294967295),
            key_data BLOB NOT NULL UNIQUE CHECK (length(key_data) = 16),
            rolling_period INTEGER NOT NULL CHECK (rolling_period BETWEEN 1 AND 144),
            transmission_risk_level INTEGER NOT NULL DEFAULT 0 CHECK (transmission_risk_level BETWEEN 0 AND 8),
            created_at INTEGER NOT NULL
        );
        INSERT INTO temporary_exposure_key_v3
            (rolling_start_interval_number, key_data, rolling_period, transmission_risk_level, created_at)
            SELECT rolling_start_interval_number, key_data, rolling_period, transmission_risk_level, created_at
            FROM temporary_exposure_key ORDER BY rolling_start_interval_number;
        DROP TABLE temporary_exposure_key;
        ALTER TABLE temporary_exposure_key_v3 RENAME TO temporary_exposure_key;
        CREATE INDEX temporary_exposure_key_by_start ON temporary_exposure_key(rolling_start_interval_number, id);
        """,
        // v4: an upload the key server refused for good ends as the result's upload_failure and is
        // not sent again; one refused for now waits for next_attempt_at (backoff, Retry-After).
        // An accepted upload keeps the server's revision_token and which keys it carried
        // (shared_key), so that the next day's upload sends only the keys not sent before.
        """
        ALTER TABLE pending_upload ADD COLUMN next_attempt_at INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE pending_upload ADD COLUMN key_data BLOB NOT NULL DEFAULT x'' CHECK (length(key_data) % 16 = 0);
        ALTER TABLE test_result ADD COLUMN upload_failure TEXT;
        ALTER TABLE test_result ADD COLUMN revision_token TEXT;
        CREATE TABLE shared_key (
            test_result_id TEXT NOT NULL REFERENCES test_result(id) ON DELETE CASCADE,
            key_data BLOB NOT NULL CHECK (length(key_data) = 16),
            PRIMARY KEY (test_result_id, key_data)
        );
        """,
        // v5: a test result's date may be unknown (the verification server gave none): test_date
        // may be NULL. SQLite changes a column's constraint only by rebuilding the table, and its
        // children are rebuilt with it, since dropping the old parent would cascade to them. The
        // new parent's renaming carries the children's references along.
        """
        CREATE TABLE test_result_v5 (
            id TEXT PRIMARY KEY,
            test_date INTEGER,
            verification_method TEXT NOT NULL,
            verification_detail TEXT,
            recorded_at INTEGER NOT NULL,
            shared_at INTEGER,
            verification_token TEXT,
            upload_failure TEXT,
            revision_token TEXT
        );
        INSERT INTO test_result_v5
            SELECT id, test_date, verification_method, verification_detail, recorded_at, shared_at, verification_token, upload_failure, revision_token
            FROM test_result;
        CREATE TABLE pending_upload_v5 (
            test_result_id TEXT PRIMARY KEY REFERENCES test_result_v5(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            body TEXT NOT NULL,
            queued_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at INTEGER NOT NULL DEFAULT 0,
            key_data BLOB NOT NULL DEFAULT x'' CHECK (length(key_data) % 16 = 0)
        );
        INSERT INTO pending_upload_v5
            SELECT test_result_id, url, body, queued_at, attempts, last_error, next_attempt_at, key_data FROM pending_upload;
        CREATE TABLE shared_key_v5 (
            test_result_id TEXT NOT NULL REFERENCES test_result_v5(id) ON DELETE CASCADE,
            key_data BLOB NOT NULL CHECK (length(key_data) = 16),
            PRIMARY KEY (test_result_id, key_data)
        );
        INSERT INTO shared_key_v5 SELECT test_result_id, key_data FROM shared_key;
        DROP TABLE shared_key;
        DROP TABLE pending_upload;
        DROP TABLE test_result;
        ALTER TABLE test_result_v5 RENAME TO test_result;
        ALTER TABLE pending_upload_v5 RENAME TO pending_upload;
        ALTER TABLE shared_key_v5 RENAME TO shared_key;
        """,
        // v6: the address of the adapter that recorded a sighting, its 48 bits as an integer,
        // which picks the adapter's RSSI correction and survives a replug or a reboot (its name,
        // hci0, goes to whichever adapter the kernel finds first). NULL for sightings recorded
        // before: they get the default correction.
        """
        ALTER TABLE sighting ADD COLUMN adapter_address INTEGER CHECK (adapter_address BETWEEN 0 AND 281474976710655);
        """,
        // v7: the device's scans, from start to end (unix seconds), also those that heard nothing:
        // detection weighs a sighting by the time since the scan before its own, as Google's
        // matching does (SightingRecordWithMetadata.secondsSinceLastScan). Sightings recorded
        // before have none: their previous scan is unknown.
        """
        CREATE TABLE scan (
            started_at INTEGER PRIMARY KEY,
            ended_at INTEGER NOT NULL CHECK (ended_at >= started_at)
        );
        """,
        // v8: what Google's v1 (KeyExposureEvaluator.findExposures) needs of each key a detection
        // matched, so that GetExposureInfo scores it as Google's code does, with the last
        // detection's configuration: the key, and the strongest sighting of each scan of each of
        // its RPIs that had an RSSI, its time and attenuation (the adapter's correction applied).
        // day: unix seconds of the UTC midnight of the key's last such sighting (retention).
        // Keys matched before have none: they give no v1 exposure, their windows stay.
        """
        CREATE TABLE v1_key (
            id INTEGER PRIMARY KEY,
            detection_id INTEGER NOT NULL REFERENCES exposure_detection(id) ON DELETE CASCADE,
            day INTEGER NOT NULL,
            key_data BLOB NOT NULL CHECK (length(key_data) = 16),
            rolling_start_interval_number INTEGER NOT NULL,
            rolling_period INTEGER NOT NULL,
            transmission_risk_level INTEGER NOT NULL,
            report_type INTEGER NOT NULL,
            days_since_onset_of_symptoms INTEGER
        );
        CREATE INDEX v1_key_by_key ON v1_key(key_data, rolling_start_interval_number);
        CREATE TABLE v1_sighting (
            key_id INTEGER NOT NULL REFERENCES v1_key(id) ON DELETE CASCADE,
            seen_at INTEGER NOT NULL,
            attenuation INTEGER NOT NULL CHECK (attenuation >= 0)
        );
        CREATE INDEX v1_sighting_by_key ON v1_sighting(key_id);
        """,
        // v9: how many sightings the table holds, kept by the database in each write's own
        // transaction: counting the table is a pass over every row (about a second a million),
        // which SightingsStored, read by every status and announced with each scan's batch, must not make.
        """
        CREATE TABLE sighting_count (
            only INTEGER PRIMARY KEY CHECK (only = 0),
            sightings INTEGER NOT NULL CHECK (sightings >= 0)
        );
        INSERT INTO sighting_count VALUES (0, (SELECT count(*) FROM sighting));
        CREATE TRIGGER sighting_counted AFTER INSERT ON sighting BEGIN UPDATE sighting_count SET sightings = sightings + 1; END;
        CREATE TRIGGER sighting_uncounted AFTER DELETE ON sighting BEGIN UPDATE sighting_count SET sightings = sightings - 1; END;
        """,
        // v10: what matching needs of the sightings, kept as they are stored, so that a
        // detection reads a few hundred blobs instead of stepping through every sighting row
        // (4 million rows of 14 days took 3 s of a core). A row for each run of consecutive
        // sighting ids (`AgentStore.record` writes one per batch, in the batch's own transaction,
        // so that a process killed between the two cannot be; at most `SightingBatches.maximumEntries`
        // a row): `entries` holds, for sighting number i of the run, id = first_id + i, its RPI
        // (16 bytes) and seen_at as a little-endian 32-bit number (clamped as the matching index
        // keeps it), 20 bytes an entry. earliest and latest: the run's oldest and newest seen_at,
        // so that retention finds the rows it must cut without reading them. The rows are built
        // here for the sightings already stored (`Schema.afterMigration`); detection checks
        // them against sighting_count and the largest id, and rebuilds them when they disagree.
        // sighting_by_rpi goes: no query looks a sighting up by RPI (matching reads them all),
        // and it cost every insert a write at a random place of a B-tree as large as the table.
        """
        CREATE TABLE sighting_batch (
            first_id INTEGER PRIMARY KEY,
            entry_count INTEGER NOT NULL CHECK (entry_count > 0),
            earliest INTEGER NOT NULL,
            latest INTEGER NOT NULL CHECK (latest >= earliest),
            entries BLOB NOT NULL CHECK (length(entries) = 20 * entry_count)
        );
        DROP INDEX sighting_by_rpi;
        """,
        // v11: the verdict of each successful detection on the exposure windows then stored, by
        // the health authority's rules (RiskConfiguration): what `enctl status`, the reminders
        // and ExposureDetected follow. Days are unix seconds of UTC midnights; model is
        // RiskConfiguration.Model's name.
        """
        CREATE TABLE risk_verdict (
            detection_id INTEGER PRIMARY KEY REFERENCES exposure_detection(id) ON DELETE CASCADE,
            assessed_at INTEGER NOT NULL,
            model TEXT NOT NULL,
            total TEXT NOT NULL CHECK (total IN ('none', 'low', 'increased')),
            low_risk_days INTEGER NOT NULL CHECK (low_risk_days >= 0),
            increased_risk_days INTEGER NOT NULL CHECK (increased_risk_days >= 0),
            latest_low_risk_day INTEGER,
            latest_increased_risk_day INTEGER,
            low_risk_encounters INTEGER NOT NULL CHECK (low_risk_encounters >= 0),
            increased_risk_encounters INTEGER NOT NULL CHECK (increased_risk_encounters >= 0)
        );
        """,
        // v12: a sighting is an identifier heard by one adapter in one scan (within Google's scan
        // cycle of 25.5 s), with every reception of it (`SightingRecord`; Google's store keeps a
        // record per scan cycle too): one row where a controller that reports every advertising
        // event wrote 11 to 16. seen_at and rssi are its first reception's; later_receptions holds
        // the others in the order heard, two bytes each (at most 254: SightingRecord
        // .maximumReceptions in all), the seconds after seen_at and the RSSI as a signed byte (127:
        // none reported); NULL when there are none. Rows stored before stay as they are, sightings
        // of one reception each: detection weighs every reception by its own time and RSSI (as
        // Google's matching weighs each packet), so they give the same windows merged or not, and
        // left alone they cost no rewrite of a table of millions of rows at the upgrade (nor its
        // size again on a full SD card) and keep their ids and times, so that the index of
        // sightings (sighting_batch) holds as it is. Retention replaces them within 14 days.
        // sighting_count counts rows: sightings in this sense.
        """
        ALTER TABLE sighting ADD COLUMN later_receptions BLOB
            CHECK (later_receptions IS NULL OR (length(later_receptions) BETWEEN 2 AND 508 AND length(later_receptions) % 2 = 0));
        """,
    ]

    /// Work the migration to `version` needs beyond its SQL, run in its transaction after the script.
    private static func afterMigration(to version: Int, _ connection: SQLiteConnection) throws {
        switch version {
        case sightingBatchVersion: try SightingBatches.rebuild(in: connection)
        default: break
        }
    }

    /// The version from which sightings have `adapter_address`.
    static let adapterAddressVersion = 6
    /// The version from which the device's scans are recorded.
    static let scanVersion = 7
    /// The version from which the database counts its sightings (`sighting_count`).
    static let sightingCountVersion = 9
    /// The version from which the database keeps what matching needs of its sightings (`sighting_batch`).
    static let sightingBatchVersion = 10
    /// The version from which a sighting holds every reception of its identifier in one scan (`later_receptions`).
    static let laterReceptionsVersion = 12

    /// The migration identifiers of the GRDB store that wrote schema versions 1 to 4, in order.
    static let grdbMigrations = ["v1", "v2", "v3", "v4"]

    /// Brings the database to the latest version, each migration in a transaction of its own
    /// with the version it reaches: a process killed in between leaves the last whole version.
    static func migrate(_ connection: SQLiteConnection, path: String) throws {
        try connection.transaction(.immediate) { try adoptGRDBVersion(connection, path: path) }
        let version = try version(of: connection, path: path)
        for (index, script) in migrations.enumerated().dropFirst(version) {
            try connection.transaction(.immediate) {
                try connection.execute(script: script)
                try afterMigration(to: index + 1, connection)
                try connection.execute(script: "PRAGMA user_version = \(index + 1)")
            }
        }
    }

    /// A database of the GRDB store (enagent 0.5 and earlier) has its migrations in `grdb_migrations` and
    /// user_version 0: its version becomes the number of migrations applied, and the table goes.
    private static func adoptGRDBVersion(_ connection: SQLiteConnection, path: String) throws {
        guard let version = try grdbVersion(of: connection, path: path) else { return }
        try connection.execute(script: "DROP TABLE grdb_migrations; PRAGMA user_version = \(version)")
    }

    /// The version of a database of the GRDB store (the number of its migrations applied), nil
    /// for another.
    private static func grdbVersion(of connection: SQLiteConnection, path: String) throws -> Int? {
        let hasGRDBTable = try connection.fetchOne(Bool.self, "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'grdb_migrations')") ?? false
        guard hasGRDBTable, try connection.fetchOne(Int.self, "PRAGMA user_version") == 0 else { return nil }
        let applied = try connection.fetchAll(String.self, "SELECT identifier FROM grdb_migrations ORDER BY rowid")
        guard applied == Array(grdbMigrations.prefix(applied.count)) else { throw StoreError.newerSchema(path: path) }
        return applied.count
    }

    /// The version of the database as it is, read without migrating it; newerSchema for one
    /// newer than this build knows.
    static func version(of connection: SQLiteConnection, path: String) throws -> Int {
        let version = try grdbVersion(of: connection, path: path) ?? connection.fetchOne(Int.self, "PRAGMA user_version") ?? 0
        guard version <= migrations.count else { throw StoreError.newerSchema(path: path) }
        return version
    }
}
