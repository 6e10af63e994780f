import ENCore
import Foundation
import Testing
import TestSupport

/// The scenarios Google's own matching code ran (Fixtures/google-matching, made by
/// scripts/google-matching/generate.sh): enagent's matching, windows and daily summaries must
/// give what Google's gave, field by field.
@Suite struct GoogleMatchingTests {
    static let fixture = GoogleMatchingFixture.scenarios

    @Test func theFixtureCoversEveryFamily() {
        let families = Set(Self.fixture.scenarios.map(\.family))
        #expect(families == ["minute-arithmetic", "scan-merge", "rpi-window", "replay", "data-mapping", "calibration", "report-types", "v1-risk", "mixed",
                             "infectiousness-none", "exposure-order", "adapters"])
        #expect(Self.fixture.scenarios.contains { !$0.expected.exposureWindows.isEmpty })
    }

    @Test(arguments: GoogleMatchingTests.fixture.scenarios)
    func exposureWindowsAreGoogles(scenario: GoogleMatchingFixture.Scenario) throws {
        let windows = try scenario.enagentWindows().map(Window.init), google = scenario.expected.exposureWindows.map(Window.init)
        #expect(windows == google, "enagent: \(windows)\nGoogle: \(google)")
    }

    @Test(arguments: GoogleMatchingTests.fixture.scenarios)
    func dailySummariesAreGoogles(scenario: GoogleMatchingFixture.Scenario) throws {
        let summaries = scenario.configuration.dailySummaries(of: try scenario.enagentWindows().map(\.window), now: Self.fixture.now)
        let expected = scenario.expected.dailySummaries
        #expect(summaries.map(\.date) == expected.map { $0.daysSinceEpoch * 86_400 })
        for (summary, google) in zip(summaries, expected) {
            let data = google.summaryData
            #expect(Self.close(summary.maximumScore, data.maximumScore), "maximumScore of \(summary.date)")
            #expect(Self.close(summary.scoreSum, data.scoreSum), "scoreSum of \(summary.date)")
            #expect(Self.close(summary.weightedDurationSum, data.weightedDurationSum), "weightedDurationSum of \(summary.date)")
        }
    }

    @Test(arguments: GoogleMatchingTests.fixture.scenarios)
    func v1ExposuresAreGoogles(scenario: GoogleMatchingFixture.Scenario) throws {
        let matcher = try scenario.matcher()
        let v1 = scenario.v1Configuration, now = Self.fixture.now
        let matches = try scenario.diagnosisKeys.enumerated().compactMap { index, key in try matcher.match(key).map { (key: index, match: $0) } }
        let results = matches.compactMap { found in v1.exposures(of: found.match, now: now).map { V1Result(key: found.key, $0) } }
        #expect(results == scenario.expected.v1ExposureResults.map(V1Result.init))
        #expect(v1.exposureInfos(of: matches.map(\.match), now: now) == scenario.expectedExposureInfos(now: now), "in Google's order")
        #expect(GoogleMatchingFixture.Scenario.V1SummaryFields(v1.summary(of: matches.map(\.match), now: now)) == scenario.expectedV1Summary(now: now))
    }

    /// Google weighs with doubles of 0...2.5, enagent with percentages: the same to rounding.
    static func close(_ value: Double, _ expected: Double) -> Bool {
        abs(value - expected) <= 1e-9 * max(1, abs(expected))
    }

    /// A key's v1 result as both sides have it.
    struct V1Result: Equatable, CustomStringConvertible {
        var key: Int, date: Int64, maximumRiskScore: Int, totalRiskScore: Int, attenuationDurations: [Int]
        /// Duration, attenuation value, the three attenuation durations, transmission risk level and risk score of each exposure.
        var exposures: [[Int]]

        init(_ google: GoogleMatchingFixture.ExposureResult) {
            (key, date, maximumRiskScore, totalRiskScore) = (google.key, google.dateMillisSinceEpoch / 1_000, google.maxRiskScore, google.totalRiskScore)
            attenuationDurations = google.attenuationDurations
            exposures = google.exposureRecords.map { [$0.durationSeconds, $0.attenuationValue] + $0.attenuationDurations + [$0.transmissionRiskLevel, $0.riskScore] }
        }

        init(key: Int, _ result: KeyExposuresV1) {
            (self.key, date, maximumRiskScore, totalRiskScore) = (key, result.date, result.maximumRiskScore, result.totalRiskScore)
            attenuationDurations = result.attenuationDurationsSeconds
            exposures = result.exposures.map {
                [$0.durationSeconds, $0.attenuationValue] + $0.attenuationDurationsSeconds + [result.key.key.transmissionRiskLevel, $0.riskScore]
            }
        }

        var description: String { "key \(key) \(date) max \(maximumRiskScore) total \(totalRiskScore) durations \(attenuationDurations) exposures \(exposures)" }
    }

    /// A window's fields as both sides have them.
    struct Window: Equatable, CustomStringConvertible {
        var key: Int, date: Int64, reportType: Int, infectiousness: Int, calibrationConfidence: Int
        var scans: [[Int?]]

        init(_ window: GoogleMatchingFixture.Window) {
            (key, date, reportType, infectiousness) = (window.key, window.daysSinceEpoch * 86_400, window.reportType, window.infectiousness)
            calibrationConfidence = window.calibrationConfidence
            scans = window.scanInstances.map { [$0.minAttenuation, $0.typicalAttenuation, $0.secondsSinceLastScan] }
        }

        init(_ window: (key: Int, window: ExposureWindow)) {
            (key, date) = (window.key, window.window.date)
            (reportType, infectiousness) = (window.window.reportType.rawValue, window.window.infectiousness.rawValue)
            calibrationConfidence = window.window.calibrationConfidence
            scans = window.window.scanInstances.map { [$0.minAttenuation, $0.typicalAttenuation, $0.secondsSinceLastScan] }
        }

        var description: String { "key \(key) \(date) type \(reportType) infectiousness \(infectiousness) confidence \(calibrationConfidence) scans \(scans)" }
    }
}

