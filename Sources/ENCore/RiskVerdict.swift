/// How exposed the person was, as a health authority's rules judge the exposure windows: the
/// Corona-Warn-App's low and increased (its LOW and HIGH), and none for nothing that counts.
public enum RiskLevel: String, Sendable, Equatable, Comparable, CaseIterable, Codable {
    case none
    /// Below the authority's alert threshold: shown, never alarmed.
    case low
    /// At or above the alert threshold: the only level that alarms.
    case increased

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .none: return 0
        case .low: return 1
        case .increased: return 2
        }
    }
}

/// One day's level and its minimum distinct encounters of each level (CWA's ExposureWindowDayRisk).
public struct DayRisk: Sendable, Equatable {
    /// Unix seconds of the day's UTC midnight.
    public var date: Int64
    public var level: RiskLevel
    public var lowRiskEncounters: Int
    public var increasedRiskEncounters: Int

    public init(date: Int64, level: RiskLevel, lowRiskEncounters: Int, increasedRiskEncounters: Int) {
        (self.date, self.level) = (date, level)
        (self.lowRiskEncounters, self.increasedRiskEncounters) = (lowRiskEncounters, increasedRiskEncounters)
    }
}

/// The verdict on the exposure windows: the aggregate of the days' risks, as the Corona-Warn-App
/// aggregates them (`DefaultRiskLevels.aggregateResults`): the total is increased when a day is,
/// the dates and counts are the days' of each level, and the encounters are summed over them.
public struct RiskVerdict: Sendable, Equatable {
    public var total: RiskLevel
    public var lowRiskDays: Int
    public var increasedRiskDays: Int
    /// Unix seconds of the UTC midnight of the latest day of each level; nil for none.
    public var latestLowRiskDay: Int64?
    public var latestIncreasedRiskDay: Int64?
    public var lowRiskEncounters: Int
    public var increasedRiskEncounters: Int

    public init(total: RiskLevel, lowRiskDays: Int, increasedRiskDays: Int, latestLowRiskDay: Int64?, latestIncreasedRiskDay: Int64?,
                lowRiskEncounters: Int, increasedRiskEncounters: Int) {
        (self.total, self.lowRiskDays, self.increasedRiskDays) = (total, lowRiskDays, increasedRiskDays)
        (self.latestLowRiskDay, self.latestIncreasedRiskDay) = (latestLowRiskDay, latestIncreasedRiskDay)
        (self.lowRiskEncounters, self.increasedRiskEncounters) = (lowRiskEncounters, increasedRiskEncounters)
    }

    /// Nothing found.
    public static let none = RiskVerdict(days: [])

    /// The aggregate of the days that have a level (CWA's steps 6 to 12; a day without one, CWA's
    /// null, counts for nothing).
    public init(days: [DayRisk]) {
        let days = days.filter { $0.level != .none }
        let low = days.filter { $0.level == .low }, increased = days.filter { $0.level == .increased }
        self.init(total: !increased.isEmpty ? .increased : !low.isEmpty ? .low : .none,
                  lowRiskDays: low.count, increasedRiskDays: increased.count,
                  latestLowRiskDay: low.map(\.date).max(), latestIncreasedRiskDay: increased.map(\.date).max(),
                  lowRiskEncounters: days.reduce(0) { $0 + $1.lowRiskEncounters },
                  increasedRiskEncounters: days.reduce(0) { $0 + $1.increasedRiskEncounters })
    }

    /// Whether this verdict asks for an alarm that `previous` did not: increased risk where there
    /// was none, or on a later day, or from more encounters.
    public func alarms(after previous: RiskVerdict?) -> Bool {
        guard total == .increased else { return false }
        guard let previous, previous.total == .increased else { return true }
        return (latestIncreasedRiskDay ?? 0) > (previous.latestIncreasedRiskDay ?? 0) || increasedRiskEncounters > previous.increasedRiskEncounters
    }
}

/// A verdict in the Corona-Warn-App's terms (`EwAggregatedRiskResult`), its fields named as its
/// shared test cases' `exp…` keys without the prefix: the total as 1 (low, also for nothing) or 2
/// (high), the dates as days before today.
public struct RiskAggregate: Codable, Equatable, Sendable {
    public var totalRiskLevel: Int
    public var ageOfMostRecentDateWithLowRisk: Int?
    public var ageOfMostRecentDateWithHighRisk: Int?
    public var numberOfDaysWithLowRisk: Int
    public var numberOfDaysWithHighRisk: Int
    public var totalMinimumDistinctEncountersWithLowRisk: Int
    public var totalMinimumDistinctEncountersWithHighRisk: Int

    public init(_ verdict: RiskVerdict, today: UTCDay) {
        func age(_ day: Int64?) -> Int? { day.map { Int(UTCDay(containing: $0).distance(to: today)) } }
        totalRiskLevel = verdict.total == .increased ? 2 : 1
        ageOfMostRecentDateWithLowRisk = age(verdict.latestLowRiskDay)
        ageOfMostRecentDateWithHighRisk = age(verdict.latestIncreasedRiskDay)
        numberOfDaysWithLowRisk = verdict.lowRiskDays
        numberOfDaysWithHighRisk = verdict.increasedRiskDays
        totalMinimumDistinctEncountersWithLowRisk = verdict.lowRiskEncounters
        totalMinimumDistinctEncountersWithHighRisk = verdict.increasedRiskEncounters
    }

    /// Nulls written out, as the cases write them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(totalRiskLevel, forKey: .totalRiskLevel)
        try container.encode(ageOfMostRecentDateWithLowRisk, forKey: .ageOfMostRecentDateWithLowRisk)
        try container.encode(ageOfMostRecentDateWithHighRisk, forKey: .ageOfMostRecentDateWithHighRisk)
        try container.encode(numberOfDaysWithLowRisk, forKey: .numberOfDaysWithLowRisk)
        try container.encode(numberOfDaysWithHighRisk, forKey: .numberOfDaysWithHighRisk)
        try container.encode(totalMinimumDistinctEncountersWithLowRisk, forKey: .totalMinimumDistinctEncountersWithLowRisk)
        try container.encode(totalMinimumDistinctEncountersWithHighRisk, forKey: .totalMinimumDistinctEncountersWithHighRisk)
    }
}

extension RiskAggregate {
    public init(totalRiskLevel: Int, ageOfMostRecentDateWithLowRisk: Int?, ageOfMostRecentDateWithHighRisk: Int?, numberOfDaysWithLowRisk: Int,
                numberOfDaysWithHighRisk: Int, totalMinimumDistinctEncountersWithLowRisk: Int, totalMinimumDistinctEncountersWithHighRisk: Int) {
        (self.totalRiskLevel, self.ageOfMostRecentDateWithLowRisk, self.ageOfMostRecentDateWithHighRisk) =
            (totalRiskLevel, ageOfMostRecentDateWithLowRisk, ageOfMostRecentDateWithHighRisk)
        (self.numberOfDaysWithLowRisk, self.numberOfDaysWithHighRisk) = (numberOfDaysWithLowRisk, numberOfDaysWithHighRisk)
        (self.totalMinimumDistinctEncountersWithLowRisk, self.totalMinimumDistinctEncountersWithHighRisk) =
            (totalMinimumDistinctEncountersWithLowRisk, totalMinimumDistinctEncountersWithHighRisk)
    }
}
