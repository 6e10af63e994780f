@testable import ENCore
import Foundation
import TestSupport
import Testing

/// The Corona-Warn-App's own test suite, every field of every case (Fixtures/corona-warn-app).
@Suite struct CoronaWarnAppRiskTests {
    static let today = UTCDay(containing: 1_764_374_400)

    @Test func theSuiteHasItsTwentyNineCases() {
        #expect(CoronaWarnAppCases.all.count == 29)
    }

    @Test(arguments: CoronaWarnAppCases.all)
    func caseGivesCoronaWarnAppsAggregate(_ testCase: CoronaWarnAppCases.Case) throws {
        let configuration = try RiskConfiguration(json: CoronaWarnAppCases.configuration)
        #expect(configuration.model == .coronaWarnApp)
        let windows = try RiskWindowsJSON.windows(testCase.json, today: Self.today)
        #expect(RiskAggregate(configuration.verdict(of: windows, now: Self.today.start + 3_600), today: Self.today) == testCase.expected)
    }

    /// The RKI's published parameters (cwa-server's risk-calculation-parameters.yaml and
    /// trl-value-mapping-1.15.yaml) drop what the test suite's leave in: a window of less than 5
    /// minutes below 79 dB, and transmission risk levels 1 and 2.
    static let published = Data("""
        {"minutesAtAttenuationFilters": [{"attenuationRange": {"min": 0, "max": 79, "maxExclusive": true},
                                          "dropIfMinutesInRange": {"min": 0, "max": 5, "maxExclusive": true}}],
         "trlFilters": [{"dropIfTrlInRange": {"min": 1, "max": 2}}],
         "minutesAtAttenuationWeights": [{"attenuationRange": {"min": 0, "max": 63, "maxExclusive": true}, "weight": 0.8},
                                         {"attenuationRange": {"min": 63, "max": 73, "maxExclusive": true}, "weight": 1.0},
                                         {"attenuationRange": {"min": 73, "max": 79, "maxExclusive": true}, "weight": 0.1}],
         "normalizedTimePerEWToRiskLevelMapping": [{"normalizedTimeRange": {"min": 0, "max": 13, "maxExclusive": true}, "riskLevel": 1},
                                                   {"normalizedTimeRange": {"min": 13, "max": 9999}, "riskLevel": 2}],
         "normalizedTimePerDayToRiskLevelMapping": [{"normalizedTimeRange": {"min": 0, "max": 13, "maxExclusive": true}, "riskLevel": 1},
                                                    {"normalizedTimeRange": {"min": 13, "max": 99999}, "riskLevel": 2}],
         "maxEncounterAgeInDays": 10,
         "trlEncoding": {"infectiousnessOffsetStandard": 1, "infectiousnessOffsetHigh": 2, "reportTypeOffsetRecursive": 0,
                         "reportTypeOffsetSelfReport": 2, "reportTypeOffsetConfirmedClinicalDiagnosis": 4, "reportTypeOffsetConfirmedTest": 6},
         "transmissionRiskValueMapping": [{"transmissionRiskLevel": 1, "transmissionRiskValue": 0}, {"transmissionRiskLevel": 2, "transmissionRiskValue": 0},
                                          {"transmissionRiskLevel": 3, "transmissionRiskValue": 0.6}, {"transmissionRiskLevel": 4, "transmissionRiskValue": 0.8},
                                          {"transmissionRiskLevel": 5, "transmissionRiskValue": 1}, {"transmissionRiskLevel": 6, "transmissionRiskValue": 1.2},
                                          {"transmissionRiskLevel": 7, "transmissionRiskValue": 1.4}, {"transmissionRiskLevel": 8, "transmissionRiskValue": 1.6}]}
        """.utf8)

    static func window(age: Int, reportType: Int = 1, infectiousness: Int = 1, scans: [(min: Int, seconds: Int)]) -> String {
        let scans = scans.map { #"{"minAttenuation": \#($0.min), "typicalAttenuation": \#($0.min), "secondsSinceLastScan": \#($0.seconds)}"# }
        return #"{"ageInDays": \#(age), "reportType": \#(reportType), "infectiousness": \#(infectiousness), "calibrationConfidence": 0, "scanInstances": [\#(scans.joined(separator: ","))]}"#
    }

    func verdict(_ windows: [String], _ configuration: Data = published) throws -> RiskVerdict {
        let windows = try RiskWindowsJSON.windows(Data("[\(windows.joined(separator: ","))]".utf8), today: Self.today)
        return try RiskConfiguration(json: configuration).verdict(of: windows, now: Self.today.start)
    }

    @Test func thePublishedFiltersDropShortWindowsOldOnesAndLowTransmissionRisk() throws {
        // 4 minutes at 60 dB: dropped by minutes at attenuation, whatever its weight.
        #expect(try verdict([Self.window(age: 1, scans: [(60, 240)])]).total == .none)
        // 20 minutes at 60 dB of a confirmed test, standard: 0.8 × 20 × 1.4 = 22.4, increased.
        #expect(try verdict([Self.window(age: 1, scans: [(60, 600), (60, 600)])]).total == .increased)
        // The same 11 days ago: older than maxEncounterAgeInDays.
        #expect(try verdict([Self.window(age: 11, scans: [(60, 600), (60, 600)])]).total == .none)
        // Recursive and standard: transmission risk level 0 + 1, in the filter's 1...2.
        #expect(try verdict([Self.window(age: 1, reportType: 4, scans: [(60, 600), (60, 600)])]).total == .none)
        // 10 minutes at 65 dB: 10 × 1.4 = 14, increased; at 75 dB, 0.1 × 10 × 1.4 = 1.4, low.
        #expect(try verdict([Self.window(age: 2, scans: [(75, 600)])]).total == .low)
    }

    @Test(arguments: [
        (#"{"model": "corona-warn-app", "minutesAtAttenuationWeights": [{"attenuationRange": {"min": 0, "max": 63}, "weight": 1}, {"attenuationRange": {"min": 63, "max": 73}, "weight": 1}]}"#,
         "minutesAtAttenuationWeights[1].attenuationRange"),
        (#"{"minutesAtAttenuationWeights": [{"attenuationRange": {"min": 70, "max": 63}, "weight": 1}]}"#, "minutesAtAttenuationWeights[0].attenuationRange"),
        (#"{"minutesAtAttenuationWeights": [{"attenuationRange": {"min": 0, "max": 63}, "weight": -0.5}]}"#, "minutesAtAttenuationWeights[0].weight"),
        (#"{"minutesAtAttenuationWeights": [], "colour": 1}"#, "colour"),
        (#"{"model": "en-express", "alertWeightedMinutesPerDay": 15, "advisoryWeightedMinutesPerDay": 15}"#, "advisoryWeightedMinutesPerDay"),
        (#"{"model": "en-express", "alertWeightedMinutesPerDay": 15, "dailySummariesConfig": {"nearDurationWeight": 300}}"#, "dailySummariesConfig.nearDurationWeight"),
        (#"{"model": "never"}"#, "model"),
        (#"{"model": "any-window", "alertWeightedMinutesPerDay": 15}"#, "alertWeightedMinutesPerDay"),
    ])
    func aBadConfigurationIsRefusedNamingTheField(json: String, field: String) {
        #expect(throws: ConfigurationError.self) { try RiskConfiguration(json: Data(json.utf8)) }
        do { _ = try RiskConfiguration(json: Data(json.utf8)) } catch { #expect(error.key == field, "\(error)") }
    }

    @Test func aRiskLevelOtherThanLowOrHighAndAnOverlappingDayMappingAreRefused() throws {
        var text = String(decoding: Self.published, as: UTF8.self)
        text = text.replacingOccurrences(of: #""max": 9999}, "riskLevel": 2"#, with: #""max": 9999}, "riskLevel": 3"#)
        #expect(throws: ConfigurationError(key: "normalizedTimePerEWToRiskLevelMapping[1].riskLevel", reason: "must be a whole number from 1 to 2")) {
            try RiskConfiguration(json: Data(text.utf8))
        }
        let overlapping = String(decoding: Self.published, as: UTF8.self)
            .replacingOccurrences(of: #"{"normalizedTimeRange": {"min": 13, "max": 99999}"#, with: #"{"normalizedTimeRange": {"min": 12, "max": 99999}"#)
        #expect(throws: ConfigurationError(key: "normalizedTimePerDayToRiskLevelMapping[1].normalizedTimeRange",
                                           reason: "overlaps normalizedTimePerDayToRiskLevelMapping[0].normalizedTimeRange")) {
            try RiskConfiguration(json: Data(overlapping.utf8))
        }
    }

    @Test func anUnknownReportTypeInTheWindowsIsRefusedNamingIt() {
        #expect(throws: ConfigurationError(key: "exposureWindows[0].reportType", reason: "must be a whole number from 1 to 4")) {
            try RiskWindowsJSON.windows(Data(#"{"exposureWindows": [\#(Self.window(age: 1, reportType: 5, scans: []))]}"#.utf8), today: Self.today)
        }
    }
}

/// The default when the authority gives none, LFPH's Wide Net with an alert at 15 weighted minutes
/// a day, and the old behaviour only when asked for.
@Suite struct ExpressRiskTests {
    let today = UTCDay(containing: 1_764_374_400)

    func verdict(_ scans: [(typical: Int, seconds: Int)], age: Int = 1, configuration: RiskConfiguration = .standard) throws -> RiskVerdict {
        let window = CoronaWarnAppRiskTests.window(age: age, scans: scans.map { ($0.typical, $0.seconds) })
        let windows = try RiskWindowsJSON.windows(Data("[\(window)]".utf8), today: today)
        return configuration.verdict(of: windows, now: today.start)
    }

    @Test func oneFarSightingIsNoRiskAndTwentyCloseMinutesAreIncreased() throws {
        #expect(try verdict([(105, 120)]) == .none)
        let close = try verdict(Array(repeating: (45, 300), count: 4))
        #expect(close.total == .increased)
        #expect(close.latestIncreasedRiskDay == today.advanced(by: -1).start)
        #expect(close.increasedRiskEncounters == 1)
    }

    @Test func theAdvisoryTierIsLowAndBelowItNothing() throws {
        // Near (100 %): 8 minutes is an advisory, 4 nothing.
        #expect(try verdict([(65, 240), (65, 240)]).total == .low)
        #expect(try verdict([(65, 240)]).total == .none)
        // Without an advisory threshold, any weighed minute below the alert is low.
        var model = ExpressRiskModel.wideNet
        model.advisoryMinutesPerDay = nil
        #expect(try verdict([(65, 60)], configuration: .express(model)).total == .low)
        #expect(try verdict([(105, 60)], configuration: .express(model)).total == .none)
    }

    @Test func theOldBehaviourIsAskedForByName() throws {
        let anyWindow = try RiskConfiguration(json: Data(#"{"model": "any-window"}"#.utf8))
        #expect(anyWindow == .anyWindow)
        #expect(try verdict([(105, 120)], configuration: anyWindow).total == .increased)
    }

    @Test func anExpressConfigurationReadsItsWeights() throws {
        let configuration = try RiskConfiguration(json: Data(#"""
            {"model": "en-express", "alertWeightedMinutesPerDay": 10,
             "dailySummariesConfig": {"attenuationDurationThresholds": [50, 60, 70], "immediateDurationWeight": 100, "nearDurationWeight": 50,
                                      "mediumDurationWeight": 0, "otherDurationWeight": 0}}
            """#.utf8))
        guard case .express(let model) = configuration else { Issue.record("not the express model"); return }
        #expect(model.advisoryMinutesPerDay == nil)
        #expect(try verdict([(55, 600), (55, 600)], configuration: configuration).total == .increased)
        #expect(try verdict([(55, 600)], configuration: configuration).total == .low)
    }
}
