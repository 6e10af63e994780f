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

    // MARK: Google's v1

    /// Sightings further apart than this end an exposure (ContactTracingFeature.maxInterpolationDurationSeconds).
    static let maximumExposureGap: Int64 = 600
    /// What one sighting stands for: a scan interval (ContactTracingFeature.scanIntervalSeconds).
    public static let scanInterval: Int64 = 300

    /// A key's v1 exposures as Google's KeyExposureEvaluator.findExposures finds them, from the
    /// strongest sighting of each scan of each RPI; nil when it has none. `now` (unix seconds)
    /// dates "days since" from the key's start (RiskScoreCalculator.bucketLatencyDays).
    public func exposures(of match: KeyMatch, now: Int64) -> KeyExposuresV1? {
        exposures(of: V1Match(match), now: now)
    }

    /// The v1 exposures of what v1 keeps of a matched key (enagentd's store holds these).
    public func exposures(of match: V1Match, now: Int64) -> KeyExposuresV1? {
        // Google's tracer keeps a REVOKED key's result for later report-type changes; its API
        // documentation counts it for nothing, and so does enagent.
        guard match.key.reportType != .revoked else { return nil }
        // v1 knows no infectiousness: a key whose days since onset map to NONE, which gives no
        // exposure window, is scored as any other and counts among the summary's matched keys
        // (KeyExposureEvaluator.findExposures reads nothing of the data mapping but the report type).
        let sightings = match.sightings
        guard !sightings.isEmpty else { return nil }
        let start = match.key.key.rollingStartIntervalNumber.unixSeconds
        let daysSince = Int((now - start) / UTCDay.seconds)
        var exposures = [ExposureV1]()
        var first = 0
        for index in sightings.indices where index + 1 == sightings.count || sightings[index + 1].time - sightings[index].time > Self.maximumExposureGap {
            exposures.append(exposure(of: sightings[first...index], daysSince: daysSince, transmissionRiskLevel: match.key.key.transmissionRiskLevel))
            first = index + 1
        }
        return KeyExposuresV1(key: match.key, date: start, daysSinceExposure: daysSince, exposures: exposures)
    }

    /// One run of sightings without a long gap (KeyExposureEvaluator.findExposures).
    private func exposure(of sightings: ArraySlice<V1Sighting>, daysSince: Int, transmissionRiskLevel: Int) -> ExposureV1 {
        // bucketizeDuration: (last − first) + one scan interval, to the nearest interval, half down.
        let estimate = sightings.last!.time - sightings.first!.time + Self.scanInterval
        let excess = estimate % Self.scanInterval
        let duration = Int(excess <= Self.scanInterval / 2 ? estimate - excess : estimate + Self.scanInterval - excess)
        // computePeriods: each sighting's attenuation holds until the next; the ends stretch half an interval.
        var weighted = 0, total = 0, durations = [0, 0, 0]
        let first = sightings.first!, last = sightings.last!
        var previous = (time: first.time - Self.scanInterval / 2, attenuation: first.attenuation)
        func hold(until time: Int64, then attenuation: Int) {
            guard time != previous.time else { return }
            let seconds = Int(time - previous.time)
            weighted += previous.attenuation * seconds
            total += seconds
            // getTimeBelowBetweenAndAbove without interpolation: a period counts by its first attenuation.
            let bucket = previous.attenuation < attenuationDurationThresholds[0] ? 0 : previous.attenuation < attenuationDurationThresholds[1] ? 1 : 2
            durations[bucket] += seconds
            previous = (time, attenuation)
        }
        for sighting in sightings { hold(until: sighting.time, then: sighting.attenuation) }
        hold(until: last.time + Self.scanInterval / 2, then: last.attenuation)
        // weightAttenuationOfPeriods: Math.round, half up.
        let attenuation = Int((Double(weighted) / Double(total) + 0.5).rounded(.down))
        return ExposureV1(durationSeconds: duration, attenuationValue: attenuation, attenuationDurationsSeconds: durations,
                          riskScore: riskScore(attenuation: attenuation, daysSince: daysSince, durationSeconds: duration,
                                               transmissionRiskLevel: transmissionRiskLevel))
    }

    /// RiskScoreCalculator.calculateRiskScore: the product of the four level values, 0 below
    /// `minimumRiskScore`; a transmission risk level of 0 counts 1.
    func riskScore(attenuation: Int, daysSince: Int, durationSeconds: Int, transmissionRiskLevel: Int) -> Int {
        let transmission = transmissionRiskLevel == 0 ? 1 : transmissionRiskLevelValues[min(transmissionRiskLevel, 8) - 1]
        let product = attenuationLevelValues[Self.attenuationLevel(attenuation) - 1]
            * daysSinceLastExposureLevelValues[Self.daysSinceExposureLevel(daysSince) - 1]
            * durationLevelValues[Self.durationLevel(minutes: durationSeconds / 60) - 1]
            * transmission
        return product < minimumRiskScore ? 0 : product
    }

    /// One ExposureInfo per exposure of the matches (Google's v1), in the order of
    /// `exposureInfos(of:now:)` on what v1 keeps of them.
    public func exposureInfos(of matches: [KeyMatch], now: Int64) -> [ExposureInfo] {
        exposureInfos(of: matches.map(V1Match.init), now: now)
    }

    /// One ExposureInfo per exposure of what v1 keeps of the matches: the keys oldest day first,
    /// keys of one day in the matches' order, and each key's exposures in the order Google lists
    /// them, its runs of sightings in time order (KeyExposureEvaluator.findExposures adds one
    /// ExposureRecord per run as it reaches the run's end), whatever their risk scores.
    public func exposureInfos(of matches: [V1Match], now: Int64) -> [ExposureInfo] {
        let keys = matches.compactMap { exposures(of: $0, now: now) }.enumerated()
            .sorted { ($0.element.day, $0.offset) < ($1.element.day, $1.offset) }.map(\.element)
        return keys.flatMap { key in
            key.exposures.map { exposure in
                ExposureInfo(date: key.day, durationMinutes: min(30, exposure.durationSeconds / 60),
                             attenuationValue: exposure.attenuationValue,
                             attenuationDurationsMinutes: exposure.attenuationDurationsSeconds.map(Self.reportedMinutes),
                             transmissionRiskLevel: key.key.key.transmissionRiskLevel, totalRiskScore: exposure.riskScore,
                             daysSinceExposure: key.daysSinceExposure)
            }
        }
    }

    /// The v1 summary of the matches (Google's v1): the keys with an exposure, their highest and
    /// summed risk scores, and the attenuation durations of all, in 5-minute steps up to 30.
    public func summary(of matches: [KeyMatch], now: Int64) -> ExposureSummaryV1 {
        summary(of: matches.map(V1Match.init), now: now)
    }

    /// The v1 summary of what v1 keeps of the matches.
    public func summary(of matches: [V1Match], now: Int64) -> ExposureSummaryV1 {
        let keys = matches.compactMap { exposures(of: $0, now: now) }
        let seconds = keys.reduce([0, 0, 0]) { sum, key in zip(sum, key.attenuationDurationsSeconds).map(+) }
        return ExposureSummaryV1(
            daysSinceLastExposure: keys.map(\.daysSinceExposure).min(), matchedKeyCount: keys.count,
            maximumRiskScore: keys.map(\.maximumRiskScore).max() ?? 0, summationRiskScore: keys.reduce(0) { $0 + $1.totalRiskScore },
            attenuationDurationsMinutes: seconds.map(Self.reportedMinutes))
    }

}

/// What Google's v1 needs of a matched key, and all that enagentd keeps of it for v1: the key and,
/// in time order, the sightings `findExposures` takes (`V1Sighting`). Scored later, with whatever
/// configuration and "now" GetExposureInfo has, it gives what scoring the whole match gives.
public struct V1Match: Hashable, Sendable {
    public var key: DiagnosisKey
    public var sightings: [V1Sighting]

    public init(key: DiagnosisKey, sightings: [V1Sighting]) {
        self.key = key
        self.sightings = sightings
    }

    /// The match's sightings that v1 counts: per RPI, the strongest of each scan
    /// (ExposureMatchingTracer.getValidSightingsForRpi with aggregateSightingsFromSingleScan), and
    /// only those with an RSSI (Google has no sighting without one: fetchValidSightings).
    public init(_ match: KeyMatch) {
        key = match.key
        sightings = match.sightings.compactMap { sighting in
            guard sighting.strongestOfItsScan, let attenuation = sighting.attenuation else { return nil }
            return V1Sighting(time: sighting.time, attenuation: attenuation)
        }
    }
}

/// A sighting as v1 weighs it: when, and its attenuation (dB, the adapter's RSSI correction applied).
public struct V1Sighting: Hashable, Sendable {
    public var time: Int64
    public var attenuation: Int

    public init(time: Int64, attenuation: Int) {
        self.time = time
        self.attenuation = attenuation
    }
}

/// A v1 exposure (ExposureInformation): one of a key's runs of sightings, dated at the key's day.
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

/// One v1 exposure as Google's KeyExposureEvaluator.findExposures finds it: a run of a key's
/// sightings without a gap over 10 minutes.
public struct ExposureV1: Hashable, Sendable {
    /// (last − first) + 300 s, to the nearest 300 s.
    public var durationSeconds: Int
    /// The attenuations weighted by the time each holds until the next, the ends stretched 150 s.
    public var attenuationValue: Int
    /// Seconds below the first threshold, between the two, and at or above the second.
    public var attenuationDurationsSeconds: [Int]
    public var riskScore: Int
}

/// A key's v1 exposures and their totals, as Google's ExposureResult holds them.
public struct KeyExposuresV1: Hashable, Sendable {
    public var key: DiagnosisKey
    /// Unix seconds of the key's start, the date Google gives its exposures.
    public var date: Int64
    /// Whole days from the key's start to the detection.
    public var daysSinceExposure: Int
    /// In time order, as findExposures lists them.
    public var exposures: [ExposureV1]

    /// Unix seconds of the UTC midnight of the key's start, its exposures' ExposureInfo date.
    public var day: Int64 { UTCDay(containing: date).start }

    public var maximumRiskScore: Int { exposures.map(\.riskScore).max() ?? 0 }
    public var totalRiskScore: Int { exposures.reduce(0) { $0 + $1.riskScore } }
    public var attenuationDurationsSeconds: [Int] {
        exposures.reduce([0, 0, 0]) { sum, exposure in zip(sum, exposure.attenuationDurationsSeconds).map(+) }
    }
}
