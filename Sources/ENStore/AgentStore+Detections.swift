import ENCore
import ENSQLite

/// The verdict a detection gave on the exposure windows stored then, by the model it used.
public struct RiskAssessment: Sendable, Equatable {
    public var verdict: RiskVerdict
    public var model: RiskConfiguration.Model
    /// Unix seconds.
    public var assessedAt: Int64

    public init(verdict: RiskVerdict, model: RiskConfiguration.Model, assessedAt: Int64) {
        (self.verdict, self.model, self.assessedAt) = (verdict, model, assessedAt)
    }
}

/// What `recordDetection` kept: the detection's row and its verdict, with the one before.
public struct RecordedDetection: Sendable, Equatable {
    public var id: Int64
    public var assessment: RiskAssessment
    /// The latest verdict before this one; nil for none.
    public var previousAssessment: RiskAssessment?
}

/// One run of exposure detection, as kept in the store.
public struct DetectionRecord: Sendable, Equatable {
    public var id: Int64
    public var startedAt: Int64
    public var finishedAt: Int64?
    public var keyFileCount: Int
    public var matchedKeyCount: Int
    /// Why the run failed, or nil.
    public var error: String?
}

extension AgentStore {
    // MARK: Exposure detection

    /// Records a finished detection, the key files it processed and its exposure windows in one
    /// transaction: a crash leaves either all of it or none, so no file is ever matched twice.
    ///
    /// `v1Matches` is what v1 keeps of each matched key (`V1Match`): GetExposureInfo scores it
    /// later, as Google's findExposures does, with the configuration of the last detection.
    ///
    /// A key counts once however often it is published: the windows and v1 records of every key in
    /// `superseding` (those this detection matched or revoked) that earlier detections stored are
    /// removed first.
    ///
    /// `risk` judges every window stored once this detection's are in (the risk verdict), in the
    /// same transaction: a detection is never kept without its verdict.
    @discardableResult
    public func recordDetection(startedAt: Int64, finishedAt: Int64, keyFiles: [ProcessedKeyFile], matchedKeyCount: Int,
                                windows: [ExposureWindow], v1Matches: [V1Match] = [],
                                superseding: [TemporaryExposureKey.Identity] = [],
                                risk: RiskConfiguration = .standard) throws(StoreError) -> RecordedDetection {
        try write { db in
            let previous = try Self.latestRiskAssessment(in: db)
            try db.execute("INSERT INTO exposure_detection (started_at, finished_at, key_file_count, matched_key_count) VALUES (?, ?, ?, ?)",
                           startedAt, finishedAt, keyFiles.count, matchedKeyCount)
            let detection = db.lastInsertedRowID
            for file in keyFiles { try Self.insert(file, at: finishedAt, in: db) }
            for key in superseding {
                // scan_instance rows go with their window (ON DELETE CASCADE).
                try db.execute("DELETE FROM exposure_window WHERE key_data = ? AND rolling_start_interval_number = ?",
                               key.keyData.bytes, key.rollingStartIntervalNumber.rawValue)
                // v1_sighting rows go with their key.
                try db.execute("DELETE FROM v1_key WHERE key_data = ? AND rolling_start_interval_number = ?",
                               key.keyData.bytes, key.rollingStartIntervalNumber.rawValue)
            }
            for window in windows {
                // The window's report type: the key's, or the configuration's for a key published
                // without one (reportTypeNoneMap); read back, it is the key's too.
                let key = window.diagnosisKey
                try db.execute("""
                    INSERT INTO exposure_window (detection_id, day, report_type, infectiousness, calibration_confidence, key_data,
                        rolling_start_interval_number, rolling_period, transmission_risk_level, days_since_onset_of_symptoms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, detection, window.date, window.reportType.rawValue, window.infectiousness.rawValue,
                    window.calibrationConfidence, key.key.keyData.bytes, key.key.rollingStartIntervalNumber.rawValue,
                    key.key.rollingPeriod, key.key.transmissionRiskLevel, key.daysSinceOnsetOfSymptoms)
                let windowID = db.lastInsertedRowID
                for scan in window.scanInstances {
                    // An unknown attenuation is stored as -1 (the columns are NOT NULL).
                    try db.execute("INSERT INTO scan_instance (window_id, min_attenuation, typical_attenuation, seconds_since_last_scan) VALUES (?, ?, ?, ?)",
                                   windowID, scan.minAttenuation ?? -1, scan.typicalAttenuation ?? -1, scan.secondsSinceLastScan)
                }
            }
            for match in v1Matches {
                guard let last = match.sightings.last else { continue }
                let key = match.key
                try db.execute("""
                    INSERT INTO v1_key (detection_id, day, key_data, rolling_start_interval_number, rolling_period, transmission_risk_level,
                        report_type, days_since_onset_of_symptoms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, detection, UTCDay(containing: last.time).start, key.key.keyData.bytes, key.key.rollingStartIntervalNumber.rawValue,
                    key.key.rollingPeriod, key.key.transmissionRiskLevel, key.reportType.rawValue, key.daysSinceOnsetOfSymptoms)
                let keyID = db.lastInsertedRowID
                for sighting in match.sightings {
                    try db.execute("INSERT INTO v1_sighting (key_id, seen_at, attenuation) VALUES (?, ?, ?)", keyID, sighting.time, sighting.attenuation)
                }
            }
            let verdict = risk.verdict(of: try Self.exposureWindows(in: db), now: finishedAt)
            let assessment = RiskAssessment(verdict: verdict, model: risk.model, assessedAt: finishedAt)
            try db.execute("""
                INSERT INTO risk_verdict (detection_id, assessed_at, model, total, low_risk_days, increased_risk_days, latest_low_risk_day,
                    latest_increased_risk_day, low_risk_encounters, increased_risk_encounters)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, detection, assessment.assessedAt, assessment.model.rawValue, verdict.total.rawValue, verdict.lowRiskDays,
                verdict.increasedRiskDays, verdict.latestLowRiskDay, verdict.latestIncreasedRiskDay, verdict.lowRiskEncounters,
                verdict.increasedRiskEncounters)
            return RecordedDetection(id: detection, assessment: assessment, previousAssessment: previous)
        }
    }

    /// The verdict of the latest detection that gave one, or nil.
    public func latestRiskAssessment() throws(StoreError) -> RiskAssessment? {
        try read { db in try Self.latestRiskAssessment(in: db) }
    }

    private static func latestRiskAssessment(in db: SQLiteConnection) throws(SQLiteError) -> RiskAssessment? {
            try db.fetchAll("""
                SELECT assessed_at, model, total, low_risk_days, increased_risk_days, latest_low_risk_day, latest_increased_risk_day,
                    low_risk_encounters, increased_risk_encounters
                FROM risk_verdict ORDER BY detection_id DESC LIMIT 1
                """) { row throws(SQLiteError) -> RiskAssessment? in
                guard let model = RiskConfiguration.Model(rawValue: try row.column(1)), let total = RiskLevel(rawValue: try row.column(2)) else { return nil }
                let verdict = RiskVerdict(total: total, lowRiskDays: try row.column(3), increasedRiskDays: try row.column(4),
                                          latestLowRiskDay: try row.column(5), latestIncreasedRiskDay: try row.column(6),
                                          lowRiskEncounters: try row.column(7), increasedRiskEncounters: try row.column(8))
                return RiskAssessment(verdict: verdict, model: model, assessedAt: try row.column(0))
            }.first ?? nil
    }

    /// Records a detection that failed, so that its error can be shown.
    public func recordFailedDetection(startedAt: Int64, error: String) throws(StoreError) {
        try write { db in
            try db.execute("INSERT INTO exposure_detection (started_at, error) VALUES (?, ?)", startedAt, error)
        }
    }

    /// The latest detection run, or nil if none ran.
    public func lastDetection() throws(StoreError) -> DetectionRecord? {
        try read { db in
            try db.fetchAll("""
                SELECT id, started_at, finished_at, key_file_count, matched_key_count, error FROM exposure_detection ORDER BY id DESC LIMIT 1
                """) { row throws(SQLiteError) in
                DetectionRecord(id: try row.column(0), startedAt: try row.column(1), finishedAt: try row.column(2), keyFileCount: try row.column(3),
                                matchedKeyCount: try row.column(4), error: try row.column(5))
            }.first
        }
    }

    /// Every stored exposure window, oldest day first.
    public func exposureWindows() throws(StoreError) -> [ExposureWindow] {
        try read { db in try Self.exposureWindows(in: db) }
    }

    private static func exposureWindows(in db: SQLiteConnection) throws(SQLiteError) -> [ExposureWindow] {
        var scans = [Int64: [ScanInstance]]()
        try db.forEachRow("SELECT window_id, min_attenuation, typical_attenuation, seconds_since_last_scan FROM scan_instance ORDER BY rowid") { row throws(SQLiteError) in
            // An unknown attenuation is stored as -1.
            let minimum: Int = try row.column(1), typical: Int = try row.column(2)
            scans[try row.column(0), default: []].append(
                ScanInstance(minAttenuation: minimum < 0 ? nil : minimum, typicalAttenuation: typical < 0 ? nil : typical,
                             secondsSinceLastScan: try row.column(3)))
        }
        return try db.fetchAll("""
            SELECT id, day, report_type, infectiousness, calibration_confidence, key_data, rolling_start_interval_number, rolling_period,
                transmission_risk_level, days_since_onset_of_symptoms
            FROM exposure_window ORDER BY day, id
            """) { row throws(SQLiteError) -> ExposureWindow? in
            guard let reportType = ReportType(rawValue: try row.column(2)), let infectiousness = Infectiousness(rawValue: try row.column(3))
            else { return nil }
            let key = TemporaryExposureKey(keyData: try row.bytes16(5), rollingStartIntervalNumber: ENIntervalNumber(try row.column(6, as: UInt32.self)),
                                           rollingPeriod: try row.column(7), transmissionRiskLevel: try row.column(8))
            return ExposureWindow(date: try row.column(1), reportType: reportType, infectiousness: infectiousness,
                                  calibrationConfidence: try row.column(4), scanInstances: scans[try row.column(0)] ?? [],
                                  diagnosisKey: DiagnosisKey(key: key, reportType: reportType, daysSinceOnsetOfSymptoms: try row.column(9)))
        }.compactMap { $0 }
    }

    /// What v1 keeps of every key that detections matched (`recordDetection`'s `v1Matches`), in
    /// the order they were stored, each key's sightings in time order.
    public func v1Matches() throws(StoreError) -> [V1Match] {
        try read { db in
            var sightings = [Int64: [V1Sighting]]()
            try db.forEachRow("SELECT key_id, seen_at, attenuation FROM v1_sighting ORDER BY rowid") { row throws(SQLiteError) in
                sightings[try row.column(0), default: []].append(V1Sighting(time: try row.column(1), attenuation: try row.column(2)))
            }
            return try db.fetchAll("""
                SELECT id, key_data, rolling_start_interval_number, rolling_period, transmission_risk_level, report_type, days_since_onset_of_symptoms
                FROM v1_key ORDER BY id
                """) { row throws(SQLiteError) -> V1Match? in
                guard let reportType = ReportType(rawValue: try row.column(5)) else { return nil }
                let key = TemporaryExposureKey(keyData: try row.bytes16(1), rollingStartIntervalNumber: ENIntervalNumber(try row.column(2, as: UInt32.self)),
                                               rollingPeriod: try row.column(3), transmissionRiskLevel: try row.column(4))
                return V1Match(key: DiagnosisKey(key: key, reportType: reportType, daysSinceOnsetOfSymptoms: try row.column(6)),
                               sightings: sightings[try row.column(0)] ?? [])
            }.compactMap { $0 }
        }
    }

    // MARK: Erasing

    /// Erases every key, sighting, processed key file, detection result (windows, v1 records) and test result ("erase
    /// local storage"); consent and settings stay. secure_delete overwrites the freed pages.
    public func eraseAllData() throws(StoreError) {
        try write { db in
            for table in ["scan_instance", "exposure_window", "v1_sighting", "v1_key", "risk_verdict", "exposure_detection", "key_file", "sighting", "sighting_batch",
                          "temporary_exposure_key", "pending_upload", "shared_key", "test_result"] {
                try db.execute("DELETE FROM \(table)")
            }
        }
    }
}

extension AgentStore {
    /// When the last detection that succeeded finished, or nil.
    public func lastSuccessfulDetection() throws(StoreError) -> Int64? {
        try read { db in try db.fetchOne(Int64?.self, "SELECT max(finished_at) FROM exposure_detection WHERE error IS NULL") ?? nil }
    }

}
