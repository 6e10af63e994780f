/// How a diagnosis was established (the export format's ReportType).
public enum ReportType: Int, Sendable, CaseIterable, Codable {
    case unknown = 0
    case confirmedTest = 1
    case confirmedClinicalDiagnosis = 2
    case selfReport = 3
    case recursive = 4
    /// A key withdrawn after publication: it must not count as an exposure.
    case revoked = 5
}

/// A TEK published by a health authority after a positive diagnosis.
public struct DiagnosisKey: Hashable, Sendable {
    public var key: TemporaryExposureKey
    public var reportType: ReportType
    /// Days from the onset of symptoms to the key's day, -14...14; nil when not given.
    public var daysSinceOnsetOfSymptoms: Int?

    public init(key: TemporaryExposureKey, reportType: ReportType = .confirmedTest, daysSinceOnsetOfSymptoms: Int? = nil) {
        self.key = key
        self.reportType = reportType
        self.daysSinceOnsetOfSymptoms = daysSinceOnsetOfSymptoms
    }
}
