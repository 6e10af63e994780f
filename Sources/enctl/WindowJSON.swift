import ENCore

/// An exposure window as every command prints it with --json: the EN API's names, report type
/// and infectiousness by name (confirmedTest, high), the day as YYYY-MM-DD (UTC), the scans as
/// the API has them, and two sums for convenience. `detect offline` adds the matched key.
struct WindowJSON: Encodable, Equatable {
    struct Key: Encodable, Equatable {
        let tek: String
        let rollingStartIntervalNumber: UInt32
        let rollingPeriod: UInt32
        let transmissionRiskLevel: Int
        let daysSinceOnsetOfSymptoms: Int?
    }

    let date: String
    let reportType: String
    let infectiousness: String
    let calibrationConfidence: Int
    let scanInstances: [ScanInstance]
    /// The lowest attenuation of any scan (dB); absent when no RSSI was known.
    let minimumAttenuation: Int?
    let seconds: Int
    let key: Key?

    init(date: Int64, reportType: ReportType?, infectiousness: Infectiousness?, calibrationConfidence: Int, scanInstances: [ScanInstance], key: Key? = nil) {
        self.date = utcDay(date)
        self.reportType = reportType.map { "\($0)" } ?? "unknown"
        self.infectiousness = infectiousness.map { "\($0)" } ?? "none"
        self.calibrationConfidence = calibrationConfidence
        self.scanInstances = scanInstances
        minimumAttenuation = scanInstances.compactMap(\.minAttenuation).min()
        seconds = scanInstances.reduce(0) { $0 + $1.secondsSinceLastScan }
        self.key = key
    }

    init(_ window: ExposureWindow) {
        let diagnosisKey = window.diagnosisKey, key = diagnosisKey.key
        self.init(date: window.date, reportType: window.reportType, infectiousness: window.infectiousness,
                  calibrationConfidence: window.calibrationConfidence, scanInstances: window.scanInstances,
                  key: Key(tek: key.keyData.hex, rollingStartIntervalNumber: key.rollingStartIntervalNumber.rawValue, rollingPeriod: key.rollingPeriod,
                           transmissionRiskLevel: key.transmissionRiskLevel, daysSinceOnsetOfSymptoms: diagnosisKey.daysSinceOnsetOfSymptoms))
    }
}
