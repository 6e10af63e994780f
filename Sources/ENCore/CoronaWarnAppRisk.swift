/// A range of the Corona-Warn-App's risk parameters (RiskCalculationParameters.Range): a missing
/// bound is 0 and both are inclusive unless said otherwise, as in the protocol buffer.
public struct RiskRange: Sendable, Equatable {
    public var min: Double
    public var max: Double
    public var minExclusive: Bool
    public var maxExclusive: Bool

    public init(min: Double, max: Double, minExclusive: Bool = false, maxExclusive: Bool = false) {
        (self.min, self.max, self.minExclusive, self.maxExclusive) = (min, max, minExclusive, maxExclusive)
    }

    /// DefaultRiskLevels' `Range.inRange`.
    public func contains(_ value: Double) -> Bool {
        if minExclusive ? value <= min : value < min { return false }
        if maxExclusive ? value >= max : value > max { return false }
        return true
    }

    /// Whether no number is in it.
    var isEmpty: Bool { min > max || (min == max && (minExclusive || maxExclusive)) }

    /// Whether some number is in both.
    func overlaps(_ other: RiskRange) -> Bool {
        let (low, lowOpen) = min > other.min ? (min, minExclusive) : min < other.min ? (other.min, other.minExclusive) : (min, minExclusive || other.minExclusive)
        let (high, highOpen) = max < other.max ? (max, maxExclusive) : max > other.max ? (other.max, other.maxExclusive) : (max, maxExclusive || other.maxExclusive)
        return low < high || (low == high && !lowOpen && !highOpen)
    }

    static let keys = ["min", "max", "minExclusive", "maxExclusive"]

    init(_ json: ConfigurationJSON) throws(ConfigurationError) {
        _ = try json.object(keys: Self.keys)
        self.init(min: try json.optional("min")?.number() ?? 0, max: try json.optional("max")?.number() ?? 0,
                  minExclusive: try json.optional("minExclusive")?.bool() ?? false, maxExclusive: try json.optional("maxExclusive")?.bool() ?? false)
        guard !isEmpty else { throw json.refuse("is inverted: no number is from its min to its max") }
    }
}

/// The Corona-Warn-App's risk calculation (cwa-app-android, `risk/DefaultRiskLevels.kt`), with
/// the parameters the RKI publishes (cwa-server,
/// `services/distribution/src/main/resources/main-config/v2/risk-calculation-parameters.yaml` and
/// `common/persistence/src/main/resources/trl-value-mapping-1.15.yaml`), read in the field names
/// of the app's configuration, so that an authority's published parameters are used as they are.
public struct CoronaWarnAppRiskModel: Sendable, Equatable {
    public struct MinutesAtAttenuationFilter: Sendable, Equatable {
        public var attenuationRange: RiskRange
        public var dropIfMinutesInRange: RiskRange
    }

    public struct MinutesAtAttenuationWeight: Sendable, Equatable {
        public var attenuationRange: RiskRange
        public var weight: Double
    }

    public struct NormalizedTimeToRiskLevel: Sendable, Equatable {
        public var normalizedTimeRange: RiskRange
        public var riskLevel: RiskLevel
    }

    /// TransmissionRiskLevelEncoding: a window's transmission risk level is its report type's
    /// offset plus its infectiousness'.
    public struct TransmissionRiskLevelEncoding: Sendable, Equatable {
        public var infectiousnessOffsetStandard: Int
        public var infectiousnessOffsetHigh: Int
        public var reportTypeOffsetRecursive: Int
        public var reportTypeOffsetSelfReport: Int
        public var reportTypeOffsetConfirmedClinicalDiagnosis: Int
        public var reportTypeOffsetConfirmedTest: Int

        static let keys = ["infectiousnessOffsetStandard", "infectiousnessOffsetHigh", "reportTypeOffsetRecursive", "reportTypeOffsetSelfReport",
                           "reportTypeOffsetConfirmedClinicalDiagnosis", "reportTypeOffsetConfirmedTest"]

        /// DefaultRiskLevels.determineTransmissionRiskLevel; nil for a report type it does not
        /// know (the app throws UnknownReportTypeException; enagent's windows always have one).
        func transmissionRiskLevel(reportType: ReportType, infectiousness: Infectiousness) -> Int? {
            let reportTypeOffset: Int
            switch reportType {
            case .recursive: reportTypeOffset = reportTypeOffsetRecursive
            case .selfReport: reportTypeOffset = reportTypeOffsetSelfReport
            case .confirmedClinicalDiagnosis: reportTypeOffset = reportTypeOffsetConfirmedClinicalDiagnosis
            case .confirmedTest: reportTypeOffset = reportTypeOffsetConfirmedTest
            case .unknown, .revoked: return nil
            }
            return reportTypeOffset + (infectiousness == .high ? infectiousnessOffsetHigh : infectiousnessOffsetStandard)
        }
    }

    public var minutesAtAttenuationFilters: [MinutesAtAttenuationFilter]
    /// Windows whose transmission risk level is in one of these ranges are dropped.
    public var trlFilters: [RiskRange]
    public var minutesAtAttenuationWeights: [MinutesAtAttenuationWeight]
    public var trlEncoding: TransmissionRiskLevelEncoding
    /// Transmission risk value by level; a level not listed has 0.
    public var transmissionRiskValueMapping: [Int: Double]
    public var normalizedTimePerEWToRiskLevelMapping: [NormalizedTimeToRiskLevel]
    public var normalizedTimePerDayToRiskLevelMapping: [NormalizedTimeToRiskLevel]
    /// Windows of days longer ago are left out (ExposureWindowsFilter.filterByAge); 0 in the
    /// parameters means 14, as the app's ExposureWindowRiskCalculationConfigMapper reads it.
    public var maxEncounterAgeInDays: Int

    static let keys = ["minutesAtAttenuationFilters", "trlFilters", "minutesAtAttenuationWeights", "trlEncoding", "transmissionRiskValueMapping",
                       "normalizedTimePerEWToRiskLevelMapping", "normalizedTimePerDayToRiskLevelMapping", "maxEncounterAgeInDays"]

    /// Reads the parameters; `extraKeys` may stand beside them (the model's name).
    init(_ json: ConfigurationJSON, extraKeys: [String] = []) throws(ConfigurationError) {
        _ = try json.object(keys: Self.keys + extraKeys)
        minutesAtAttenuationFilters = try (json.optional("minutesAtAttenuationFilters")?.elements() ?? []).map { filter throws(ConfigurationError) in
            _ = try filter.object(keys: ["attenuationRange", "dropIfMinutesInRange"])
            return MinutesAtAttenuationFilter(attenuationRange: try RiskRange(filter.required("attenuationRange")),
                                              dropIfMinutesInRange: try RiskRange(filter.required("dropIfMinutesInRange")))
        }
        trlFilters = try (json.optional("trlFilters")?.elements() ?? []).map { filter throws(ConfigurationError) in
            _ = try filter.object(keys: ["dropIfTrlInRange"])
            return try RiskRange(filter.required("dropIfTrlInRange"))
        }
        let weights = try json.required("minutesAtAttenuationWeights").elements()
        minutesAtAttenuationWeights = try weights.map { weight throws(ConfigurationError) in
            _ = try weight.object(keys: ["attenuationRange", "weight"])
            return MinutesAtAttenuationWeight(attenuationRange: try RiskRange(weight.required("attenuationRange")),
                                              weight: try weight.required("weight").number(atLeast: 0))
        }
        try Self.refuseOverlaps(weights, minutesAtAttenuationWeights.map(\.attenuationRange), field: "attenuationRange")

        let encoding = try json.required("trlEncoding")
        _ = try encoding.object(keys: TransmissionRiskLevelEncoding.keys)
        let offsets = try TransmissionRiskLevelEncoding.keys.map { key throws(ConfigurationError) in try encoding.required(key).integer(in: 0...100) }
        trlEncoding = TransmissionRiskLevelEncoding(infectiousnessOffsetStandard: offsets[0], infectiousnessOffsetHigh: offsets[1],
                                                    reportTypeOffsetRecursive: offsets[2], reportTypeOffsetSelfReport: offsets[3],
                                                    reportTypeOffsetConfirmedClinicalDiagnosis: offsets[4], reportTypeOffsetConfirmedTest: offsets[5])

        transmissionRiskValueMapping = [:]
        for mapping in try json.required("transmissionRiskValueMapping").elements() {
            _ = try mapping.object(keys: ["transmissionRiskLevel", "transmissionRiskValue"])
            let level = try mapping.required("transmissionRiskLevel").integer(in: 0...200)
            guard transmissionRiskValueMapping[level] == nil else { throw mapping.refuse("maps transmission risk level \(level) a second time") }
            transmissionRiskValueMapping[level] = try mapping.required("transmissionRiskValue").number(atLeast: 0)
        }
        normalizedTimePerEWToRiskLevelMapping = try Self.riskLevelMapping(json.required("normalizedTimePerEWToRiskLevelMapping"))
        normalizedTimePerDayToRiskLevelMapping = try Self.riskLevelMapping(json.required("normalizedTimePerDayToRiskLevelMapping"))
        let age = try json.optional("maxEncounterAgeInDays")?.integer(in: 0...14) ?? 0
        maxEncounterAgeInDays = age > 0 ? age : 14
    }

    private static func riskLevelMapping(_ json: ConfigurationJSON) throws(ConfigurationError) -> [NormalizedTimeToRiskLevel] {
        let elements = try json.elements()
        let mapping = try elements.map { element throws(ConfigurationError) in
            _ = try element.object(keys: ["normalizedTimeRange", "riskLevel"])
            let level = try element.required("riskLevel").integer(in: 1...2)
            return NormalizedTimeToRiskLevel(normalizedTimeRange: try RiskRange(element.required("normalizedTimeRange")),
                                             riskLevel: level == 2 ? .increased : .low)
        }
        try refuseOverlaps(elements, mapping.map(\.normalizedTimeRange), field: "normalizedTimeRange")
        return mapping
    }

    /// The app takes the first range that holds a value: ranges that overlap would make the
    /// order of the list decide, which no authority means.
    private static func refuseOverlaps(_ elements: [ConfigurationJSON], _ ranges: [RiskRange], field: String) throws(ConfigurationError) {
        for later in ranges.indices {
            for earlier in ranges.indices where earlier < later && ranges[earlier].overlaps(ranges[later]) {
                throw ConfigurationError(key: "\(elements[later].path).\(field)", reason: "overlaps \(elements[earlier].path).\(field)")
            }
        }
    }

    /// A window's transmission risk level, normalized time and level (DefaultRiskLevels.calculateRisk);
    /// nil for a window the parameters drop.
    struct WindowRisk {
        var transmissionRiskLevel: Int
        var normalizedTime: Double
        var level: RiskLevel
    }

    func risk(of window: ExposureWindow) -> WindowRisk? {
        // dropDueToMinutesAtAttenuation: minutes of the scans whose minimum attenuation is in the
        // filter's range (negative seconds count 0). An unknown attenuation is in no range.
        for filter in minutesAtAttenuationFilters {
            let seconds = window.scanInstances.reduce(0.0) { total, scan in
                guard let attenuation = scan.minAttenuation, filter.attenuationRange.contains(Double(attenuation)) else { return total }
                return total + Double(max(scan.secondsSinceLastScan, 0))
            }
            if filter.dropIfMinutesInRange.contains(seconds / 60) { return nil }
        }
        guard let level = trlEncoding.transmissionRiskLevel(reportType: window.reportType, infectiousness: window.infectiousness),
              !trlFilters.contains(where: { $0.contains(Double(level)) })
        else { return nil }
        let value = transmissionRiskValueMapping[level] ?? 0
        // determineWeightedSeconds: each scan's seconds by the first weight whose range holds its minimum attenuation.
        let weightedSeconds = window.scanInstances.reduce(0.0) { total, scan in
            let weight = scan.minAttenuation.flatMap { attenuation in
                minutesAtAttenuationWeights.first { $0.attenuationRange.contains(Double(attenuation)) }?.weight
            } ?? 0
            return total + Double(max(scan.secondsSinceLastScan, 0)) * weight
        }
        let normalizedTime = value * (weightedSeconds / 60)
        guard let windowLevel = normalizedTimePerEWToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalizedTime) })?.riskLevel
        else { return nil }
        return WindowRisk(transmissionRiskLevel: level, normalizedTime: normalizedTime, level: windowLevel)
    }

    /// The days' risks (DefaultRiskLevels.aggregateRiskPerDate) of the windows of the last
    /// `maxEncounterAgeInDays` days before `today`.
    func dayRisks(of windows: [ExposureWindow], today: UTCDay) -> [DayRisk] {
        let oldest = today.advanced(by: -Int64(maxEncounterAgeInDays)).start
        var byDay = [Int64: [(window: ExposureWindow, risk: WindowRisk)]]()
        for window in windows where window.date >= oldest {
            guard let risk = risk(of: window) else { continue }
            byDay[window.date, default: []].append((window, risk))
        }
        return byDay.sorted { $0.key < $1.key }.compactMap { date, results in
            // The day's normalized time rounded to one decimal (roundToDecimal: Math.round of
            // ten times it), so that 1 × 3 × 1.2 counts 3.6 (EXPOSUREAPP-12211).
            let normalizedTime = (results.reduce(0) { $0 + $1.risk.normalizedTime } * 10).rounded(.toNearestOrAwayFromZero) / 10
            guard let level = normalizedTimePerDayToRiskLevelMapping.first(where: { $0.normalizedTimeRange.contains(normalizedTime) })?.riskLevel
            else { return nil }
            // minimumDistinctEncountersForRisk: windows of one transmission risk level and
            // calibration confidence may be one encounter.
            func encounters(_ level: RiskLevel) -> Int {
                Set(results.filter { $0.risk.level == level }.map { "\($0.risk.transmissionRiskLevel)_\($0.window.calibrationConfidence)" }).count
            }
            return DayRisk(date: date, level: level, lowRiskEncounters: encounters(.low), increasedRiskEncounters: encounters(.increased))
        }
    }
}
