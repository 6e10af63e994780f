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
        #expect(families == ["minute-arithmetic", "scan-merge", "rpi-window", "replay", "data-mapping", "calibration", "report-types", "v1-risk", "mixed"])
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

    /// Google weighs with doubles of 0...2.5, enagent with percentages: the same to rounding.
    static func close(_ value: Double, _ expected: Double) -> Bool {
        abs(value - expected) <= 1e-9 * max(1, abs(expected))
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

