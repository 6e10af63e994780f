/// The v1 risk configuration (Apple's ENExposureConfiguration v1 / Google's ExposureConfiguration),
/// with the JSON keys of Apple's sample app. Level values are 0...8, weights 0...100.
public struct ExposureConfigurationV1: Sendable, Equatable, Decodable {
    public var minimumRiskScore = 0
    public var attenuationLevelValues = [1, 2, 3, 4, 5, 6, 7, 8]
    public var daysSinceLastExposureLevelValues = [1, 2, 3, 4, 5, 6, 7, 8]
    public var durationLevelValues = [1, 2, 3, 4, 5, 6, 7, 8]
    public var transmissionRiskLevelValues = [1, 2, 3, 4, 5, 6, 7, 8]
    /// Accepted for compatibility; the total risk score is the product of the level values.
    public var attenuationWeight = 50.0, daysSinceLastExposureWeight = 50.0, durationWeight = 50.0, transmissionRiskWeight = 50.0
    /// The two attenuation thresholds (dB) of `attenuationDurations`.
    public var attenuationDurationThresholds = [50, 74]

    public init() {}

    static let keys = [
        "minimumRiskScore", "attenuationLevelValues", "daysSinceLastExposureLevelValues", "durationLevelValues",
        "transmissionRiskLevelValues", "attenuationWeight", "daysSinceLastExposureWeight", "durationWeight",
        "transmissionRiskWeight", "attenuationDurationThresholds",
    ]
    /// Keys that only a v1 configuration has: their presence says a v1 result is wanted.
    static let distinctiveKeys = keys.filter { $0 != "attenuationDurationThresholds" }

    public init(from decoder: any Decoder) throws {
        let json = try decoder.container(keyedBy: AnyKey.self)
        try json.requireOnly(Self.keys + ExposureConfigurationV2.keys)
        minimumRiskScore = try json.integer("minimumRiskScore", in: 0...4096, default: 0)
        let levels = { (name: String, value: [Int]) in try json.integers(name, count: 8, in: 0...8, default: value) }
        attenuationLevelValues = try levels("attenuationLevelValues", attenuationLevelValues)
        daysSinceLastExposureLevelValues = try levels("daysSinceLastExposureLevelValues", daysSinceLastExposureLevelValues)
        durationLevelValues = try levels("durationLevelValues", durationLevelValues)
        transmissionRiskLevelValues = try levels("transmissionRiskLevelValues", transmissionRiskLevelValues)
        attenuationWeight = try json.number("attenuationWeight", in: 0...100, default: attenuationWeight)
        daysSinceLastExposureWeight = try json.number("daysSinceLastExposureWeight", in: 0...100, default: daysSinceLastExposureWeight)
        durationWeight = try json.number("durationWeight", in: 0...100, default: durationWeight)
        transmissionRiskWeight = try json.number("transmissionRiskWeight", in: 0...100, default: transmissionRiskWeight)
        // Checked with the v2 keys; two values are the v1 thresholds.
        if let thresholds = try? json.decode([Int].self, forKey: AnyKey("attenuationDurationThresholds")), thresholds.count == 2 {
            attenuationDurationThresholds = thresholds
        }
    }

    /// Level 1...8 of an attenuation (dB); unknown counts as the weakest.
    static func attenuationLevel(_ attenuation: Int?) -> Int {
        guard let attenuation else { return 1 }
        return 1 + [73, 63, 51, 33, 27, 15, 10].prefix { attenuation <= $0 }.count
    }

    static func daysSinceExposureLevel(_ days: Int) -> Int {
        1 + [14, 12, 10, 8, 6, 4, 2].prefix { days < $0 }.count
    }

    static func durationLevel(minutes: Int) -> Int {
        minutes == 0 ? 1 : 2 + [5, 10, 15, 20, 25, 30].prefix { minutes > $0 }.count
    }

    /// Minutes in 5-minute steps (to the nearest), at most 30.
    static func reportedMinutes(seconds: Int) -> Int { min(30, (seconds + 150) / 300 * 5) }

    /// One ExposureInfo per key and day, oldest first; `now` (unix seconds) dates "days since".
    public func exposureInfos(of windows: [ExposureWindow], now: Int64) -> [ExposureInfo] {
        let today = UTCDay(containing: now)
        let groups = Dictionary(grouping: windows) { DayKey(date: $0.date, key: $0.diagnosisKey.key) }
        return groups.map { group, windows in
            let scans = windows.flatMap(\.scanInstances)
            let seconds = scans.reduce(0) { $0 + $1.secondsSinceLastScan }
            let known = scans.filter { $0.typicalAttenuation != nil }
            let knownSeconds = known.reduce(0) { $0 + $1.secondsSinceLastScan }
            let attenuation = knownSeconds == 0 ? nil : Int((Double(known.reduce(0) { $0 + $1.typicalAttenuation! * $1.secondsSinceLastScan }) / Double(knownSeconds)).rounded())
            var buckets = [0, 0, 0]
            for scan in scans {
                let bucket = scan.typicalAttenuation.map { $0 < attenuationDurationThresholds[0] ? 0 : $0 < attenuationDurationThresholds[1] ? 1 : 2 } ?? 2
                buckets[bucket] += scan.secondsSinceLastScan
            }
            let daysSince = Int(UTCDay(containing: group.date).distance(to: today))
            let risk = group.key.transmissionRiskLevel
            let product = attenuationLevelValues[Self.attenuationLevel(attenuation) - 1]
                * daysSinceLastExposureLevelValues[Self.daysSinceExposureLevel(daysSince) - 1]
                * durationLevelValues[Self.durationLevel(minutes: (seconds + 59) / 60) - 1]
                * transmissionRiskLevelValues[max(risk, 1) - 1]
            return ExposureInfo(
                date: group.date, durationMinutes: Self.reportedMinutes(seconds: seconds), attenuationValue: attenuation,
                attenuationDurationsMinutes: buckets.map(Self.reportedMinutes), transmissionRiskLevel: risk,
                totalRiskScore: product < minimumRiskScore ? 0 : product, daysSinceExposure: daysSince)
        }.sorted { ($0.date, $0.totalRiskScore) < ($1.date, $1.totalRiskScore) }
    }

    /// The v1 summary over `exposureInfos(of:now:)`.
    public func summary(of windows: [ExposureWindow], now: Int64) -> ExposureSummaryV1 {
        let infos = exposureInfos(of: windows, now: now)
        let durations = infos.reduce([0, 0, 0]) { sum, info in zip(sum, info.attenuationDurationsMinutes).map { min(30, $0 + $1) } }
        return ExposureSummaryV1(
            daysSinceLastExposure: infos.map(\.daysSinceExposure).min(),
            matchedKeyCount: Set(windows.map(\.diagnosisKey.key.keyData)).count,
            maximumRiskScore: infos.map(\.totalRiskScore).max() ?? 0,
            summationRiskScore: infos.reduce(0) { $0 + $1.totalRiskScore },
            attenuationDurationsMinutes: durations)
    }

    private struct DayKey: Hashable {
        var date: Int64
        var key: TemporaryExposureKey
    }
}

/// A v1 exposure: one key on one day.
public struct ExposureInfo: Hashable, Sendable, Codable {
    /// Unix seconds of the UTC midnight.
    public var date: Int64
    /// In 5-minute steps, at most 30.
    public var durationMinutes: Int
    /// The time-weighted typical attenuation (dB); nil when no RSSI was known.
    public var attenuationValue: Int?
    /// Minutes below, between and above the two thresholds, in 5-minute steps, each at most 30.
    public var attenuationDurationsMinutes: [Int]
    public var transmissionRiskLevel: Int
    /// The product of the four level values; 0 below `minimumRiskScore`.
    public var totalRiskScore: Int
    public var daysSinceExposure: Int

    public init(date: Int64, durationMinutes: Int, attenuationValue: Int?, attenuationDurationsMinutes: [Int], transmissionRiskLevel: Int,
                totalRiskScore: Int, daysSinceExposure: Int) {
        (self.date, self.durationMinutes, self.attenuationValue, self.attenuationDurationsMinutes) = (date, durationMinutes, attenuationValue, attenuationDurationsMinutes)
        (self.transmissionRiskLevel, self.totalRiskScore, self.daysSinceExposure) = (transmissionRiskLevel, totalRiskScore, daysSinceExposure)
    }
}

public struct ExposureSummaryV1: Hashable, Sendable, Codable {
    public var daysSinceLastExposure: Int?
    public var matchedKeyCount: Int
    public var maximumRiskScore: Int
    public var summationRiskScore: Int
    public var attenuationDurationsMinutes: [Int]
}
