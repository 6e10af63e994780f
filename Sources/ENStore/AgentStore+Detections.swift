import ENCore
import Foundation
import GRDB

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
    /// A key counts once however often it is published: the windows of every key in `superseding`
    /// (those this detection matched or revoked) that earlier detections stored are removed first.
    @discardableResult
    public func recordDetection(startedAt: Int64, finishedAt: Int64, keyFiles: [ProcessedKeyFile], matchedKeyCount: Int,
                                windows: [ExposureWindow], superseding: [TemporaryExposureKey.Identity] = []) throws(StoreError) -> Int64 {
        try write { db in
            try db.execute(sql: """
                INSERT INTO exposure_detection (started_at, finished_at, key_file_count, matched_key_count) VALUES (?, ?, ?, ?)
                """, arguments: [startedAt, finishedAt, keyFiles.count, matchedKeyCount])
            let detection = db.lastInsertedRowID
            for file in keyFiles { try Self.insert(file, at: finishedAt, in: db) }
            for key in superseding {
                // scan_instance rows go with their window (ON DELETE CASCADE).
                try db.execute(sql: "DELETE FROM exposure_window WHERE key_data = ? AND rolling_start_interval_number = ?",
                               arguments: [Data(key.keyData.bytes), key.rollingStartIntervalNumber.rawValue])
            }
            for window in windows {
                let key = window.diagnosisKey
                try db.execute(sql: """
                    INSERT INTO exposure_window (detection_id, day, report_type, infectiousness, calibration_confidence, key_data,
                        rolling_start_interval_number, rolling_period, transmission_risk_level, days_since_onset_of_symptoms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [detection, window.date, key.reportType.rawValue, window.infectiousness.rawValue,
                                     window.calibrationConfidence, Data(key.key.keyData.bytes), key.key.rollingStartIntervalNumber.rawValue,
                                     key.key.rollingPeriod, key.key.transmissionRiskLevel, key.daysSinceOnsetOfSymptoms])
                let windowID = db.lastInsertedRowID
                for scan in window.scanInstances {
                    // An unknown attenuation is stored as -1 (the columns are NOT NULL).
                    try db.execute(sql: """
                        INSERT INTO scan_instance (window_id, min_attenuation, typical_attenuation, seconds_since_last_scan) VALUES (?, ?, ?, ?)
                        """, arguments: [windowID, scan.minAttenuation ?? -1, scan.typicalAttenuation ?? -1, scan.secondsSinceLastScan])
                }
            }
            return detection
        }
    }

    /// Records a detection that failed, so that its error can be shown.
    public func recordFailedDetection(startedAt: Int64, error: String) throws(StoreError) {
        try write { db in
            try db.execute(sql: "INSERT INTO exposure_detection (started_at, error) VALUES (?, ?)", arguments: [startedAt, error])
        }
    }

    /// The latest detection run, or nil if none ran.
    public func lastDetection() throws(StoreError) -> DetectionRecord? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM exposure_detection ORDER BY id DESC LIMIT 1").map {
                DetectionRecord(id: $0["id"], startedAt: $0["started_at"], finishedAt: $0["finished_at"], keyFileCount: $0["key_file_count"],
                                matchedKeyCount: $0["matched_key_count"], error: $0["error"])
            }
        }
    }

    /// Every stored exposure window, oldest day first.
    public func exposureWindows() throws(StoreError) -> [ExposureWindow] {
        try read { db in
            let scans = Dictionary(grouping: try Row.fetchAll(db, sql: "SELECT * FROM scan_instance ORDER BY rowid")) { (row: Row) -> Int64 in row["window_id"] }
            return try Row.fetchAll(db, sql: "SELECT * FROM exposure_window ORDER BY day, id").compactMap { row -> ExposureWindow? in
                let keyData: Data = row["key_data"]
                guard let reportType = ReportType(rawValue: row["report_type"]), let infectiousness = Infectiousness(rawValue: row["infectiousness"])
                else { return nil }
                let key = TemporaryExposureKey(keyData: keyData.withUnsafeBytes { Bytes16($0) },
                                               rollingStartIntervalNumber: ENIntervalNumber(row["rolling_start_interval_number"]),
                                               rollingPeriod: row["rolling_period"], transmissionRiskLevel: row["transmission_risk_level"])
                let instances = (scans[row["id"]] ?? []).map { scan -> ScanInstance in
                    let minimum: Int = scan["min_attenuation"], typical: Int = scan["typical_attenuation"]
                    return ScanInstance(minAttenuation: minimum < 0 ? nil : minimum, typicalAttenuation: typical < 0 ? nil : typical,
                                        secondsSinceLastScan: scan["seconds_since_last_scan"])
                }
                return ExposureWindow(date: row["day"], reportType: reportType, infectiousness: infectiousness,
                                      calibrationConfidence: row["calibration_confidence"], scanInstances: instances,
                                      diagnosisKey: DiagnosisKey(key: key, reportType: reportType, daysSinceOnsetOfSymptoms: row["days_since_onset_of_symptoms"]))
            }
        }
    }

    // MARK: Erasing

    /// Erases every key, sighting, processed key file, detection result and test result ("erase
    /// local storage"); consent and settings stay. secure_delete overwrites the freed pages.
    public func eraseAllData() throws(StoreError) {
        try write { db in
            for table in ["scan_instance", "exposure_window", "exposure_detection", "key_file", "sighting", "temporary_exposure_key",
                          "pending_upload", "shared_key", "test_result"] {
                try db.execute(sql: "DELETE FROM \(table)")
            }
        }
    }
}

extension AgentStore {
    /// When the last detection that succeeded finished, or nil.
    public func lastSuccessfulDetection() throws(StoreError) -> Int64? {
        try read { db in try Int64.fetchOne(db, sql: "SELECT max(finished_at) FROM exposure_detection WHERE error IS NULL") }
    }

    /// The most recent day with an exposure window (unix seconds of its UTC midnight), or nil.
    public func latestExposureDay() throws(StoreError) -> Int64? {
        try read { db in try Int64.fetchOne(db, sql: "SELECT max(day) FROM exposure_window") }
    }
}
