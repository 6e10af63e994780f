/// The v2 scoring configuration (protocol.md §3), read from the JSON keys of Apple's
/// ENExposureConfiguration and Google's DailySummariesConfig. Weights are percentages, 0...250.
public struct ExposureConfigurationV2: Sendable, Equatable, Decodable {
    /// Typical attenuations up to these (dB) are immediate, near and medium; above, other.
    public var attenuationThresholds = [50, 70, 90]
    public var immediateDurationWeight = 100.0
    public var nearDurationWeight = 100.0
    public var mediumDurationWeight = 100.0
    public var otherDurationWeight = 100.0
    public var infectiousnessStandardWeight = 100.0
    public var infectiousnessHighWeight = 100.0
    public var reportTypeConfirmedTestWeight = 100.0
    public var reportTypeConfirmedClinicalDiagnosisWeight = 100.0
    public var reportTypeSelfReportedWeight = 100.0
    public var reportTypeRecursiveWeight = 100.0
    /// The report type assumed for keys published without one.
    public var reportTypeNoneMap = ReportType.confirmedTest
    /// Infectiousness by days since onset of symptoms (-14...14). Empty (not configured): every day
    /// is standard; otherwise the days not listed are none.
    public var infectiousnessForDaysSinceOnsetOfSymptoms = [Int: Infectiousness]()
    public var infectiousnessWhenDaysSinceOnsetMissing = Infectiousness.standard
    /// Windows scoring below this are dropped.
    public var minimumWindowScore = 0.0
    /// Only windows on the days from today to this many days ago count; 0 means all.
    public var daysSinceLastExposureThreshold = 0

    public init() {}

    /// The weights (0...250 %) by JSON key.
    private static let weights: [(key: String, path: WritableKeyPath<Self, Double> & Sendable)] = [
        ("immediateDurationWeight", \.immediateDurationWeight), ("nearDurationWeight", \.nearDurationWeight),
        ("mediumDurationWeight", \.mediumDurationWeight), ("otherDurationWeight", \.otherDurationWeight),
        ("infectiousnessStandardWeight", \.infectiousnessStandardWeight), ("infectiousnessHighWeight", \.infectiousnessHighWeight),
        ("reportTypeConfirmedTestWeight", \.reportTypeConfirmedTestWeight),
        ("reportTypeConfirmedClinicalDiagnosisWeight", \.reportTypeConfirmedClinicalDiagnosisWeight),
        ("reportTypeSelfReportedWeight", \.reportTypeSelfReportedWeight), ("reportTypeRecursiveWeight", \.reportTypeRecursiveWeight),
    ]

    /// The other JSON keys.
    private enum Key: String, CaseIterable {
        case attenuationDurationThresholds, reportTypeNoneMap, infectiousnessForDaysSinceOnsetOfSymptoms, infectiousnessWhenDaysSinceOnsetMissing
        case minimumWindowScore, daysSinceLastExposureThreshold

        var coding: AnyKey { AnyKey(rawValue) }
    }

    static let keys = weights.map(\.key) + Key.allCases.map(\.rawValue)

    /// Reads the v2 keys of a configuration; v1 keys may stand beside them (see `ExposureConfiguration`).
    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: AnyKey.self)
        try json.requireOnly(Self.keys + ExposureConfigurationV1.keys)
        for (key, path) in Self.weights { self[keyPath: path] = try json.number(key, in: 0...250, default: self[keyPath: path]) }
        // Two thresholds are the v1 attenuationDurations'; three are the v2 buckets'.
        if json.contains(Key.attenuationDurationThresholds.coding) {
            let thresholds = try? json.decode([Int].self, forKey: Key.attenuationDurationThresholds.coding)
            guard let thresholds, thresholds.count == 2 || thresholds.count == 3,
                  thresholds.allSatisfy((0...255).contains), thresholds == thresholds.sorted()
            else {
                throw ConfigurationError(key: Key.attenuationDurationThresholds.rawValue,
                                         reason: "must be 2 (v1) or 3 (v2) increasing whole numbers from 0 to 255")
            }
            if thresholds.count == 3 { attenuationThresholds = thresholds }
        }
        let noneMap = try json.integer(Key.reportTypeNoneMap.rawValue, in: 1...4, default: reportTypeNoneMap.rawValue)
        reportTypeNoneMap = ReportType(rawValue: noneMap)!
        infectiousnessWhenDaysSinceOnsetMissing = Infectiousness(rawValue: try json.integer(
            Key.infectiousnessWhenDaysSinceOnsetMissing.rawValue, in: 0...2, default: infectiousnessWhenDaysSinceOnsetMissing.rawValue))!
        if json.contains(Key.infectiousnessForDaysSinceOnsetOfSymptoms.coding) {
            let problem = ConfigurationError(key: Key.infectiousnessForDaysSinceOnsetOfSymptoms.rawValue,
                                             reason: "must map days \"-14\"...\"14\" to 0 (none), 1 (standard) or 2 (high)")
            guard let map = try? json.decode([String: Int].self, forKey: Key.infectiousnessForDaysSinceOnsetOfSymptoms.coding) else { throw problem }
            for (day, value) in map {
                guard let day = Int(day), (-14...14).contains(day), let infectiousness = Infectiousness(rawValue: value) else { throw problem }
                infectiousnessForDaysSinceOnsetOfSymptoms[day] = infectiousness
            }
        }
        minimumWindowScore = try json.number(Key.minimumWindowScore.rawValue, in: 0...Double(Int32.max), default: minimumWindowScore)
        daysSinceLastExposureThreshold = try json.integer(Key.daysSinceLastExposureThreshold.rawValue, in: 0...14, default: 0)
    }

    /// Google's ExposureWindowUtils.getInfectiousness: days outside -14...14 count as missing; a
    /// mapping of some days gives the others none (DiagnosisKeysDataMapping.setDaysSinceOnsetToInfectiousness),
    /// no mapping at all standard (ExposureMatchingTracer's createDefaultTekMetadataRecord).
    public func infectiousness(daysSinceOnsetOfSymptoms days: Int?) -> Infectiousness {
        guard let days, (-14...14).contains(days) else { return infectiousnessWhenDaysSinceOnsetMissing }
        guard !infectiousnessForDaysSinceOnsetOfSymptoms.isEmpty else { return .standard }
        return infectiousnessForDaysSinceOnsetOfSymptoms[days] ?? .none
    }

    /// The attenuation weight (%) of a scan's typical attenuation; unknown counts as other.
    func durationWeight(typicalAttenuation: Int?) -> Double {
        guard let attenuation = typicalAttenuation else { return otherDurationWeight }
        if attenuation <= attenuationThresholds[0] { return immediateDurationWeight }
        if attenuation <= attenuationThresholds[1] { return nearDurationWeight }
        if attenuation <= attenuationThresholds[2] { return mediumDurationWeight }
        return otherDurationWeight
    }

    func reportTypeWeight(_ type: ReportType) -> Double {
        switch type {
        case .confirmedTest: return reportTypeConfirmedTestWeight
        case .confirmedClinicalDiagnosis: return reportTypeConfirmedClinicalDiagnosisWeight
        case .selfReport: return reportTypeSelfReportedWeight
        case .recursive: return reportTypeRecursiveWeight
        case .unknown, .revoked: return 0
        }
    }

    func infectiousnessWeight(_ infectiousness: Infectiousness) -> Double {
        switch infectiousness {
        case .none: return 0
        case .standard: return infectiousnessStandardWeight
        case .high: return infectiousnessHighWeight
        }
    }

    /// Seconds of the window weighted by attenuation bucket.
    public func weightedDuration(of window: ExposureWindow) -> Double {
        window.scanInstances.reduce(0) { $0 + Double($1.secondsSinceLastScan) * durationWeight(typicalAttenuation: $1.typicalAttenuation) / 100 }
    }

    /// Weighted duration × report-type weight × infectiousness weight.
    public func score(of window: ExposureWindow) -> Double {
        weightedDuration(of: window) * reportTypeWeight(window.reportType) / 100 * infectiousnessWeight(window.infectiousness) / 100
    }

    /// One summary per day that has a window, oldest first, summing the windows that score at
    /// least `minimumWindowScore` (a day whose windows all score less has zeros), as Google's
    /// DailySummaryUtils.getDailySummaries. `now` (unix seconds) sets which days
    /// `daysSinceLastExposureThreshold` keeps: N keeps the days 0...N ago.
    public func dailySummaries(of windows: [ExposureWindow], now: Int64) -> [DailySummary] {
        let today = UTCDay(containing: now)
        var days = [Int64: DailySummary]()
        for window in windows {
            if daysSinceLastExposureThreshold > 0, UTCDay(containing: window.date).distance(to: today) > Int64(daysSinceLastExposureThreshold) { continue }
            var day = days[window.date] ?? DailySummary(date: window.date, maximumScore: 0, scoreSum: 0, weightedDurationSum: 0)
            let score = score(of: window)
            guard score >= minimumWindowScore else {
                days[window.date] = day
                continue
            }
            day.maximumScore = max(day.maximumScore, score)
            day.scoreSum += score
            day.weightedDurationSum += weightedDuration(of: window)
            days[window.date] = day
        }
        return days.values.sorted { $0.date < $1.date }
    }
}

/// The v2 summary of one day's exposure windows.
public struct DailySummary: Hashable, Sendable, Codable {
    /// Unix seconds of the day's UTC midnight.
    public var date: Int64
    public var maximumScore: Double
    public var scoreSum: Double
    public var weightedDurationSum: Double

    public init(date: Int64, maximumScore: Double, scoreSum: Double, weightedDurationSum: Double) {
        self.date = date
        self.maximumScore = maximumScore
        self.scoreSum = scoreSum
        self.weightedDurationSum = weightedDurationSum
    }
}
