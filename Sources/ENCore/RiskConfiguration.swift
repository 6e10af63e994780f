import FoundationEssentials

/// Exposure Notifications Express' verdict (the mode of iOS and Android without a health
/// authority's app): a day's weighted minutes, the sum of its windows' scores as Google's daily
/// summaries compute them (`DailySummary.scoreSum`), alert at the authority's threshold; an
/// advisory threshold below it, when given, marks the days worth telling of (LFPH's tiers).
public struct ExpressRiskModel: Sendable, Equatable {
    /// The weights the day's minutes are computed with (the keys of a v2 exposure configuration).
    public var dailySummaries: ExposureConfigurationV2
    public var alertMinutesPerDay: Double
    /// nil: every day with weighted minutes below the alert is low.
    public var advisoryMinutesPerDay: Double?

    /// LFPH's Wide Net (lfph/gaen-risk-scoring, risk-scoring.md, "Updated thresholds and weights
    /// recommendations"): immediate up to 55 dB at 200 %, near up to 70 dB at 100 %, medium up to
    /// 80 dB at 25 %, other 0 %; an alert at 15 minutes a day (a close contact: 15 minutes in 24
    /// hours) and an advisory from 5 ("Tiered notifications", its example classification).
    public static let wideNet: ExpressRiskModel = {
        var weights = ExposureConfigurationV2()
        weights.attenuationThresholds = [55, 70, 80]
        (weights.immediateDurationWeight, weights.nearDurationWeight, weights.mediumDurationWeight, weights.otherDurationWeight) = (200, 100, 25, 0)
        return ExpressRiskModel(dailySummaries: weights, alertMinutesPerDay: 15, advisoryMinutesPerDay: 5)
    }()

    public init(dailySummaries: ExposureConfigurationV2, alertMinutesPerDay: Double, advisoryMinutesPerDay: Double?) {
        (self.dailySummaries, self.alertMinutesPerDay, self.advisoryMinutesPerDay) = (dailySummaries, alertMinutesPerDay, advisoryMinutesPerDay)
    }

    static let keys = ["alertWeightedMinutesPerDay", "advisoryWeightedMinutesPerDay", "dailySummariesConfig"]

    init(_ json: ConfigurationJSON, extraKeys: [String]) throws(ConfigurationError) {
        _ = try json.object(keys: Self.keys + extraKeys)
        let alert = try json.required("alertWeightedMinutesPerDay")
        alertMinutesPerDay = try alert.number(atLeast: 0)
        advisoryMinutesPerDay = try json.optional("advisoryWeightedMinutesPerDay")?.number(atLeast: 0)
        if let advisory = advisoryMinutesPerDay, advisory >= alertMinutesPerDay {
            throw json.optional("advisoryWeightedMinutesPerDay")!.refuse("must be below alertWeightedMinutesPerDay (\(alertMinutesPerDay))")
        }
        guard let weights = json.optional("dailySummariesConfig") else {
            dailySummaries = Self.wideNet.dailySummaries
            return
        }
        do {
            dailySummaries = try JSONDecoder().decode(ExposureConfigurationV2.self, from: try weights.value.encoded())
        } catch let error as ConfigurationError {
            throw ConfigurationError(key: weights.path + "." + error.key, reason: error.reason)
        } catch {
            throw weights.refuse("must be a JSON object")
        }
    }

    func dayRisks(of windows: [ExposureWindow], today: UTCDay) -> [DayRisk] {
        // The day's encounters: the keys of its windows that weigh (scored once each).
        var weighingKeys = [Int64: Set<TemporaryExposureKey.Identity>]()
        for window in windows {
            let score = dailySummaries.score(of: window)
            if score > 0 && score >= dailySummaries.minimumWindowScore { weighingKeys[window.date, default: []].insert(window.diagnosisKey.key.identity) }
        }
        return dailySummaries.dailySummaries(of: windows, now: today.start).compactMap { summary in
            let minutes = summary.scoreSum / 60
            let level: RiskLevel
            if minutes >= alertMinutesPerDay {
                level = .increased
            } else if let advisory = advisoryMinutesPerDay {
                level = minutes >= advisory ? .low : .none
            } else {
                level = minutes > 0 ? .low : .none
            }
            guard level != .none else { return nil }
            let encounters = weighingKeys[summary.date]?.count ?? 0
            return DayRisk(date: summary.date, level: level, lowRiskEncounters: level == .low ? encounters : 0,
                           increasedRiskEncounters: level == .increased ? encounters : 0)
        }
    }
}

/// A health authority's rules for what exposure windows mean: the verdict's model and its
/// parameters (docs/detection.md, "The verdict").
public enum RiskConfiguration: Sendable, Equatable {
    case express(ExpressRiskModel)
    case coronaWarnApp(CoronaWarnAppRiskModel)
    /// enagent before 0.7: any window is increased risk. Only when a configuration asks for it.
    case anyWindow

    /// When the authority gives none: LFPH's Wide Net with an alert at 15 weighted minutes a day.
    public static let standard = RiskConfiguration.express(.wideNet)

    public enum Model: String, CaseIterable, Sendable {
        case express = "en-express"
        case coronaWarnApp = "corona-warn-app"
        case anyWindow = "any-window"
    }

    public var model: Model {
        switch self {
        case .express: return .express
        case .coronaWarnApp: return .coronaWarnApp
        case .anyWindow: return .anyWindow
        }
    }

    /// Reads a configuration: `"model"` names it, and without it the object is the Corona-Warn-App's
    /// parameters, as an authority publishes them.
    public init(json data: Data) throws(ConfigurationError) {
        guard let value = JSONValue(parsing: data) else { throw ConfigurationError(key: "(the configuration)", reason: "is not JSON") }
        let json = ConfigurationJSON(value)
        guard case .object = value else { throw json.refuse("must be a JSON object") }
        let name = try json.optional("model").map { model throws(ConfigurationError) in
            guard let name = model.value.string, let known = Model(rawValue: name) else {
                throw model.refuse("must be one of \(Model.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            }
            return known
        } ?? .coronaWarnApp
        switch name {
        case .express: self = .express(try ExpressRiskModel(json, extraKeys: ["model"]))
        case .coronaWarnApp: self = .coronaWarnApp(try CoronaWarnAppRiskModel(json, extraKeys: ["model"]))
        case .anyWindow:
            _ = try json.object(keys: ["model"])
            self = .anyWindow
        }
    }

    /// The days' risks of `windows`, with `now` (unix seconds) as today.
    public func dayRisks(of windows: [ExposureWindow], now: Int64) -> [DayRisk] {
        let today = UTCDay(containing: now)
        switch self {
        case .express(let model): return model.dayRisks(of: windows, today: today)
        case .coronaWarnApp(let model): return model.dayRisks(of: windows, today: today)
        case .anyWindow:
            return Dictionary(grouping: windows, by: \.date).sorted { $0.key < $1.key }.map { date, windows in
                DayRisk(date: date, level: .increased, lowRiskEncounters: 0,
                        increasedRiskEncounters: Set(windows.map(\.diagnosisKey.key.identity)).count)
            }
        }
    }

    public func verdict(of windows: [ExposureWindow], now: Int64) -> RiskVerdict {
        RiskVerdict(days: dayRisks(of: windows, now: now))
    }
}
