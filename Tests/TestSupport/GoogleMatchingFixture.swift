import ENCore
import Foundation
import Testing

/// Tests/ENCoreTests/Fixtures/google-matching/scenarios.json, the scenarios Google's matching code
/// ran, as scripts/google-matching writes it; ENCoreTests compares the matching with it,
/// CommandTests enctl detect offline, and EnagentdTests the daemon's detection.
/// ENAGENT_GOOGLE_MATCHING_FIXTURE names another such file (one generate.sh wrote with a fresh seed).
public struct GoogleMatchingFixture: Decodable, Sendable {
    public static let committedPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ENCoreTests/Fixtures/google-matching/scenarios.json").path
    public static let path = ProcessInfo.processInfo.environment["ENAGENT_GOOGLE_MATCHING_FIXTURE"].flatMap { $0.isEmpty ? nil : $0 } ?? committedPath
    /// Whether the tests read the committed fixture (not another named by the environment).
    public static var isCommitted: Bool { path == committedPath }

    /// The fixture; a missing or malformed one stops the tests that need it.
    public static let scenarios: GoogleMatchingFixture = {
        do {
            return try JSONDecoder().decode(GoogleMatchingFixture.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            fatalError("\(path): \(error)")
        }
    }()

    public var googleCommit: String
    public var now: Int64
    public var scenarios: [Scenario]

    public struct Scenario: Decodable, Sendable, CustomTestStringConvertible {
        public var family: String
        public var name: String
        public var keys: [Key]
        public var sightings: [Sighting]
        public var diagnosisKeysDataMapping: DataMapping
        public var dailySummariesConfig: DailySummariesConfig
        public var exposureConfiguration: ExposureConfiguration
        /// dB added to the RSSIs of the adapter at each address (the adapters family); none: 0.
        public var rssiCorrections: [String: Int]?
        public var expected: Expected

        public var testDescription: String { name }

        /// The scenario's v2 configuration in enagent's terms (weights in %).
        public var configuration: ExposureConfigurationV2 {
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

        /// The scenario's v1 configuration in enagent's terms.
        public var v1Configuration: ExposureConfigurationV1 {
            var configuration = ExposureConfigurationV1()
            let google = exposureConfiguration
            configuration.minimumRiskScore = google.minimumRiskScore
            configuration.attenuationLevelValues = google.attenuationScores
            configuration.daysSinceLastExposureLevelValues = google.daysSinceLastExposureScores
            configuration.durationLevelValues = google.durationScores
            configuration.transmissionRiskLevelValues = google.transmissionRiskScores
            configuration.attenuationDurationThresholds = google.durationAtAttenuationThresholds
            return configuration
        }

        /// The same configurations as enctl's --config reads them. Its attenuationDurationThresholds
        /// are the v1 ones, which leaves the v2 ones at their default, the scenarios' own.
        public var configurationJSON: String {
            get throws {
                let v2 = configuration, v1 = v1Configuration
                guard v2.attenuationThresholds == ExposureConfigurationV2().attenuationThresholds else {
                    throw ConfigurationMismatch(scenario: name)
                }
                var json: [String: Any] = [
                    "attenuationDurationThresholds": v2.attenuationThresholds,
                    "immediateDurationWeight": v2.immediateDurationWeight, "nearDurationWeight": v2.nearDurationWeight,
                    "mediumDurationWeight": v2.mediumDurationWeight, "otherDurationWeight": v2.otherDurationWeight,
                    "reportTypeConfirmedTestWeight": v2.reportTypeConfirmedTestWeight,
                    "reportTypeConfirmedClinicalDiagnosisWeight": v2.reportTypeConfirmedClinicalDiagnosisWeight,
                    "reportTypeSelfReportedWeight": v2.reportTypeSelfReportedWeight, "reportTypeRecursiveWeight": v2.reportTypeRecursiveWeight,
                    "infectiousnessStandardWeight": v2.infectiousnessStandardWeight, "infectiousnessHighWeight": v2.infectiousnessHighWeight,
                    "reportTypeNoneMap": v2.reportTypeNoneMap.rawValue,
                    "infectiousnessWhenDaysSinceOnsetMissing": v2.infectiousnessWhenDaysSinceOnsetMissing.rawValue,
                    "minimumWindowScore": v2.minimumWindowScore, "daysSinceLastExposureThreshold": v2.daysSinceLastExposureThreshold,
                ]
                json["infectiousnessForDaysSinceOnsetOfSymptoms"] = diagnosisKeysDataMapping.daysSinceOnsetToInfectiousness
                json["attenuationDurationThresholds"] = v1.attenuationDurationThresholds
                json["minimumRiskScore"] = v1.minimumRiskScore
                json["attenuationLevelValues"] = v1.attenuationLevelValues
                json["daysSinceLastExposureLevelValues"] = v1.daysSinceLastExposureLevelValues
                json["durationLevelValues"] = v1.durationLevelValues
                json["transmissionRiskLevelValues"] = v1.transmissionRiskLevelValues
                return String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self)
            }
        }

        /// The sightings as enctl's --sightings reads them.
        public var jsonLines: String {
            sightings.map { sighting in
                let previous = sighting.previousScanTime.map { #","previousScanTime":\#($0)"# } ?? ""
                let adapter = sighting.adapterAddress.map { #","adapterAddress":"\#($0)""# } ?? ""
                return #"{"rpi":"\#(sighting.rpi)","aem":"\#(sighting.aem)","rssi":\#(sighting.rssi),"time":\#(sighting.time)\#(previous)\#(adapter)}"#
            }.joined(separator: "\n") + "\n"
        }

        /// The scenario's corrections in enagent's terms, as enagent.conf's rssi-correction.ADDRESS gives them.
        public var adapterRssiCorrections: RssiCorrections {
            get throws {
                var byAdapter = [BluetoothAddress: Int]()
                for (address, decibels) in rssiCorrections ?? [:] {
                    byAdapter[try #require(BluetoothAddress(address), "an adapter's address: \(address)")] = decibels
                }
                return RssiCorrections(byAdapter: byAdapter)
            }
        }

        /// The same as enctl detect offline's --rssi-correction arguments.
        public var rssiCorrectionArguments: [String] {
            (rssiCorrections ?? [:]).sorted { $0.key < $1.key }.flatMap { ["--rssi-correction", "\($0.key)=\($0.value)"] }
        }

        public var diagnosisKeys: [DiagnosisKey] {
            get throws {
                try keys.map { key in
                    DiagnosisKey(key: TemporaryExposureKey(keyData: try TemporaryExposureKeyData(hex: key.tek),
                                                           rollingStartIntervalNumber: ENIntervalNumber(key.rollingStartIntervalNumber),
                                                           rollingPeriod: key.rollingPeriod, transmissionRiskLevel: key.transmissionRiskLevel),
                                 reportType: ReportType(rawValue: key.reportType)!, daysSinceOnsetOfSymptoms: key.daysSinceOnsetOfSymptoms)
                }
            }
        }

        public var enagentSightings: [ENCore.Sighting] {
            get throws {
                try sightings.map {
                    ENCore.Sighting(rpi: try Bytes16(hex: $0.rpi), aem: try AssociatedEncryptedMetadata(hex: $0.aem), rssi: $0.rssi,
                                    time: $0.time, adapter: "fixture", adapterAddress: try $0.adapterAddress.map { try #require(BluetoothAddress($0)) },
                                    previousScanTime: $0.previousScanTime)
                }
            }
        }

        /// enagent's windows, with the index of the key of each, keys in the scenario's order.
        public func enagentWindows() throws -> [(key: Int, window: ExposureWindow)] {
            let matcher = try self.matcher()
            let configuration = configuration
            return try diagnosisKeys.enumerated().flatMap { index, key in
                try matcher.match(key).map { ExposureWindowing.windows(for: $0, configuration: configuration).map { (index, $0) } } ?? []
            }
        }

        /// A matcher of the scenario's sightings, with its adapters' RSSI corrections.
        public func matcher() throws -> KeyMatcher {
            try KeyMatcher(index: SightingIndex(try enagentSightings), rssiCorrections: try adapterRssiCorrections)
        }
    }

    /// enctl's configuration has one attenuationDurationThresholds for v1 (2) or v2 (3).
    public struct ConfigurationMismatch: Error, CustomStringConvertible {
        public let scenario: String
        public var description: String { "\(scenario): v2 attenuation thresholds other than the default cannot go beside v1's" }
    }

    public struct Key: Decodable, Sendable {
        public var tek: String
        public var rollingStartIntervalNumber: UInt32
        public var rollingPeriod: UInt32
        public var transmissionRiskLevel: Int
        public var reportType: Int
        public var daysSinceOnsetOfSymptoms: Int?
    }

    public struct Sighting: Decodable, Sendable {
        /// The index of the key whose RPI it carries, and the interval of that RPI.
        public var key: Int
        public var interval: Int64
        public var rpi: String
        public var aem: String
        public var time: Int64
        public var rssi: Int8
        public var previousScanTime: Int64?
        /// The address of the adapter that heard it (the adapters family); none: one without a correction.
        public var adapterAddress: String?
    }

    public struct DataMapping: Decodable, Sendable {
        public var daysSinceOnsetToInfectiousness: [String: Int]
        public var reportTypeWhenMissing: Int
        public var infectiousnessWhenDaysSinceOnsetMissing: Int
    }

    public struct DailySummariesConfig: Decodable, Sendable {
        public var attenuationBucketThresholdDb: [Int]
        public var attenuationBucketWeights: [Double]
        public var reportTypeWeights: [String: Double]
        public var infectiousnessWeights: [String: Double]
        public var daysSinceExposureThreshold: Int
        public var minimumWindowScore: Double
    }

    public struct ExposureConfiguration: Decodable, Sendable {
        public var minimumRiskScore: Int
        public var attenuationScores: [Int]
        public var daysSinceLastExposureScores: [Int]
        public var durationScores: [Int]
        public var transmissionRiskScores: [Int]
        public var durationAtAttenuationThresholds: [Int]
    }

    public struct Expected: Decodable, Sendable {
        public var exposureWindows: [Window]
        public var dailySummaries: [DailySummary]
        public var v1ExposureResults: [ExposureResult]
    }

    /// Google's v1 result of one key.
    public struct ExposureResult: Decodable, Sendable {
        public var key: Int
        public var dateMillisSinceEpoch: Int64
        public var maxRiskScore: Int
        public var totalRiskScore: Int
        public var attenuationDurations: [Int]
        public var exposureRecords: [ExposureRecord]
    }

    public struct ExposureRecord: Decodable, Sendable {
        public var durationSeconds: Int
        public var attenuationValue: Int
        public var attenuationDurations: [Int]
        public var transmissionRiskLevel: Int
        public var riskScore: Int
    }

    public struct Window: Decodable, Sendable {
        public var key: Int
        public var daysSinceEpoch: Int64
        public var reportType: Int
        public var infectiousness: Int
        public var calibrationConfidence: Int
        public var scanInstances: [ScanInstance]
    }

    public struct ScanInstance: Decodable, Sendable {
        public var minAttenuation: Int
        public var typicalAttenuation: Int
        public var secondsSinceLastScan: Int
    }

    public struct DailySummary: Decodable, Sendable {
        public var daysSinceEpoch: Int64
        public var summaryData: SummaryData
    }

    public struct SummaryData: Decodable, Sendable {
        public var maximumScore: Double
        public var scoreSum: Double
        public var weightedDurationSum: Double
    }
}
