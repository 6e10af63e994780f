import FoundationEssentials

/// Exposure windows as the Corona-Warn-App's shared risk-calculation cases write them (the EN
/// API's names): `ageInDays`, `reportType` (1 confirmed test … 4 recursive), `infectiousness` (1
/// standard, 2 high), `calibrationConfidence` and `scanInstances` with `minAttenuation`,
/// `typicalAttenuation` and `secondsSinceLastScan`. A list of windows, or an object with them
/// under `exposureWindows` (one of CWA's cases as it is; its other members are not read).
public enum RiskWindowsJSON {
    static let windowKeys = ["ageInDays", "reportType", "infectiousness", "calibrationConfidence", "scanInstances"]
    static let scanKeys = ["minAttenuation", "typicalAttenuation", "secondsSinceLastScan"]

    /// The windows, dated `ageInDays` before `today`. Each stands for an encounter of its own
    /// (a key of its own), as nothing says which were one person.
    public static func windows(_ data: Data, today: UTCDay) throws(ConfigurationError) -> [ExposureWindow] {
        guard let value = JSONValue(parsing: data) else { throw ConfigurationError(key: "(the windows)", reason: "is not JSON") }
        var list = ConfigurationJSON(value, path: "")
        if case .object = value {
            guard let windows = list.optional("exposureWindows") else {
                throw ConfigurationError(key: "exposureWindows", reason: "is missing: give a list of windows, or an object with them there")
            }
            list = windows
        }
        return try list.elements().enumerated().map { index, window throws(ConfigurationError) in
            _ = try window.object(keys: windowKeys)
            let age = try window.required("ageInDays").integer(in: 0...3650)
            let reportType = ReportType(rawValue: try window.required("reportType").integer(in: 1...4))!
            let infectiousness = Infectiousness(rawValue: try window.required("infectiousness").integer(in: 1...2))!
            let scans = try window.required("scanInstances").elements().map { scan throws(ConfigurationError) in
                _ = try scan.object(keys: scanKeys)
                return ScanInstance(minAttenuation: try scan.required("minAttenuation").integer(in: 0...255),
                                    typicalAttenuation: try scan.required("typicalAttenuation").integer(in: 0...255),
                                    secondsSinceLastScan: try scan.required("secondsSinceLastScan").integer(in: -Int(Int32.max)...Int(Int32.max)))
            }
            let date = today.advanced(by: -Int64(age)).start
            let key = TemporaryExposureKey(keyData: Bytes16(high: 0, low: UInt64(index)),
                                           rollingStartIntervalNumber: ENIntervalNumber(UInt32(clamping: date / 600)),
                                           rollingPeriod: 144, transmissionRiskLevel: 0)
            return ExposureWindow(date: date, reportType: reportType, infectiousness: infectiousness,
                                  calibrationConfidence: try window.required("calibrationConfidence").integer(in: 0...3), scanInstances: scans,
                                  diagnosisKey: DiagnosisKey(key: key, reportType: reportType))
        }
    }
}
