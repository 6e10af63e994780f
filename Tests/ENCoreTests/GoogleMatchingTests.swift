import ENCore
import Foundation
import Testing

/// The scenarios Google's own matching code ran (Fixtures/google-matching, made by
/// scripts/google-matching/generate.sh): enagent's matching, windows and daily summaries must
/// give what Google's gave, field by field.
@Suite struct GoogleMatchingTests {
    static let fixture: GoogleMatchingFixture = {
        let url = Bundle.module.url(forResource: "scenarios", withExtension: "json", subdirectory: "Fixtures/google-matching")!
        return try! JSONDecoder().decode(GoogleMatchingFixture.self, from: Data(contentsOf: url))
    }()

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

/// Fixtures/google-matching/scenarios.json as scripts/google-matching writes it.
struct GoogleMatchingFixture: Decodable {
    var googleCommit: String
    var now: Int64
    var scenarios: [Scenario]

    struct Scenario: Decodable, Sendable, CustomTestStringConvertible {
        var family: String
        var name: String
        var keys: [Key]
        var sightings: [Sighting]
        var diagnosisKeysDataMapping: DataMapping
        var dailySummariesConfig: DailySummariesConfig
        var expected: Expected

        var testDescription: String { name }

        /// The scenario's v2 configuration in enagent's terms (weights in %).
        var configuration: ExposureConfigurationV2 {
            var configuration = ExposureConfigurationV2()
            let google = dailySummariesConfig
            configuration.attenuationThresholds = google.attenuationBucketThresholdDb
            let percent = { (weight: Double?) in (weight ?? 0) * 100 }
            (configuration.immediateDurationWeight, configuration.nearDurationWeight) = (percent(google.attenuationBucketWeights[0]), percent(google.attenuationBucketWeights[1]))
            (configuration.mediumDurationWeight, configuration.otherDurationWeight) = (percent(google.attenuationBucketWeights[2]), percent(google.attenuationBucketWeights[3]))
            configuration.reportTypeConfirmedTestWeight = percent(google.reportTypeWeights["1"])
            configuration.reportTypeConfirmedClinicalDiagnosisWeight = percent(google.reportTypeWeights["2"])
            configuration.reportTypeSelfReportedWeight = percent(google.reportTypeWeights["3"])
            configuration.reportTypeRecursiveWeight = percent(google.reportTypeWeights["4"])
            configuration.infectiousnessStandardWeight = percent(google.infectiousnessWeights["1"])
            configuration.infectiousnessHighWeight = percent(google.infectiousnessWeights["2"])
            configuration.minimumWindowScore = google.minimumWindowScore
            configuration.daysSinceLastExposureThreshold = google.daysSinceExposureThreshold
            let mapping = diagnosisKeysDataMapping
            configuration.reportTypeNoneMap = ReportType(rawValue: mapping.reportTypeWhenMissing)!
            configuration.infectiousnessWhenDaysSinceOnsetMissing = Infectiousness(rawValue: mapping.infectiousnessWhenDaysSinceOnsetMissing)!
            for (day, value) in mapping.daysSinceOnsetToInfectiousness {
                configuration.infectiousnessForDaysSinceOnsetOfSymptoms[Int(day)!] = Infectiousness(rawValue: value)!
            }
            return configuration
        }

        var diagnosisKeys: [DiagnosisKey] {
            get throws {
                try keys.map { key in
                    DiagnosisKey(key: TemporaryExposureKey(keyData: try TemporaryExposureKeyData(hex: key.tek),
                                                           rollingStartIntervalNumber: ENIntervalNumber(key.rollingStartIntervalNumber),
                                                           rollingPeriod: key.rollingPeriod, transmissionRiskLevel: key.transmissionRiskLevel),
                                 reportType: ReportType(rawValue: key.reportType)!, daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms)
                }
            }
        }

        var enagentSightings: [ENCore.Sighting] {
            get throws {
                try sightings.map {
                    ENCore.Sighting(rpi: try Bytes16(hex: $0.rpi), aem: try AssociatedEncryptedMetadata(hex: $0.aem), rssi: $0.rssi,
                                    time: $0.time, adapter: "fixture", previousScanTime: $0.previousScanTime)
                }
            }
        }

        /// enagent's windows, with the index of the key of each, keys in the scenario's order.
        func enagentWindows() throws -> [(key: Int, window: ExposureWindow)] {
            let matcher = try KeyMatcher(index: SightingIndex(try enagentSightings))
            let configuration = configuration
            return try diagnosisKeys.enumerated().flatMap { index, key in
                try matcher.match(key).map { ExposureWindowing.windows(for: $0, configuration: configuration).map { (index, $0) } } ?? []
            }
        }
    }

    struct Key: Decodable {
        var tek: String
        var rollingStartIntervalNumber: UInt32
        var rollingPeriod: UInt32
        var transmissionRiskLevel: Int
        var reportType: Int
        var daysSinceOnsetOfSymptoms: Int?
    }

    struct Sighting: Decodable {
        var rpi: String
        var aem: String
        var time: Int64
        var rssi: Int8
        var previousScanTime: Int64?
    }

    struct DataMapping: Decodable {
        var daysSinceOnsetToInfectiousness: [String: Int]
        var reportTypeWhenMissing: Int
        var infectiousnessWhenDaysSinceOnsetMissing: Int
    }

    struct DailySummariesConfig: Decodable {
        var attenuationBucketThresholdDb: [Int]
        var attenuationBucketWeights: [Double]
        var reportTypeWeights: [String: Double]
        var infectiousnessWeights: [String: Double]
        var daysSinceExposureThreshold: Int
        var minimumWindowScore: Double
    }

    struct Expected: Decodable {
        var exposureWindows: [Window]
        var dailySummaries: [DailySummary]
    }

    struct Window: Decodable {
        var key: Int
        var daysSinceEpoch: Int64
        var reportType: Int
        var infectiousness: Int
        var calibrationConfidence: Int
        var scanInstances: [ScanInstance]
    }

    struct ScanInstance: Decodable {
        var minAttenuation: Int
        var typicalAttenuation: Int
        var secondsSinceLastScan: Int
    }

    struct DailySummary: Decodable {
        var daysSinceEpoch: Int64
        var summaryData: SummaryData
    }

    struct SummaryData: Decodable {
        var maximumScore: Double
        var scoreSum: Double
        var weightedDurationSum: Double
    }
}
