@testable import ENCore
import Foundation
import TestSupport
import Testing

@Suite struct ExposureWindowTests {
    func windows(_ times: [(Int64, Int?)], key: DiagnosisKey? = nil, configuration: ExposureConfigurationV2 = .init()) throws -> [ExposureWindow] {
        let key = try key ?? Broadcaster().key
        let sightings = times.map { MatchedSighting(time: $0.0, rssi: nil, metadata: Metadata(transmitPower: 0), attenuation: $0.1) }
        return ExposureWindowing.windows(for: KeyMatch(key: key, sightings: sightings), configuration: configuration)
    }

    /// Up to 25.5 s between sightings is one scan; 30 minutes from a window's first sighting a new
    /// window starts (Google's KeyExposureEvaluator.findExposureWindows).
    @Test func sightingsUpTo25_5SecondsApartFormOneScanAndThirtyMinutesOneWindow() throws {
        let day: Int64 = 1_700_006_400  // a UTC midnight
        let result = try windows([
            (day + 100, 40), (day + 110, 50), (day + 135, 61),   // one scan: 10 s, then 25 s
            (day + 161, 70),                                      // 26 s later: the next scan
            (day + 800, nil),
            (day + 1_900, 30),                                    // 30 min after the window's first: a new window
        ])
        #expect(result.count == 2)
        #expect(result.allSatisfy { $0.date == day })
        #expect(result[0].scanInstances.map(\.minAttenuation) == [40, 70, nil])
        #expect(result[0].scanInstances.map(\.typicalAttenuation) == [50, 70, nil])
        #expect(result[1].scanInstances.map(\.minAttenuation) == [30])
    }

    /// A scan's seconds since the last are whole minutes of the clock since its device's previous
    /// scan, at most 5, 2 when unknown (SightingRecordWithMetadata.secondsSinceLastScan).
    @Test func secondsSinceLastScanAreWholeMinutesSinceTheDevicesPreviousScan() throws {
        #expect(ScanGap(time: 120, previousScanTime: 119).seconds == 60)
        #expect(ScanGap(time: 179, previousScanTime: 60).seconds == 60)
        #expect(ScanGap(time: 1_000, previousScanTime: 100).seconds == 300)
        #expect(ScanGap(time: 1_000, previousScanTime: nil).seconds == 120)
        #expect(ScanGap(time: 1_000, previousScanTime: 0).seconds == 120)
        let day: Int64 = 1_700_006_400
        let metadata = Metadata(transmitPower: 0)
        let sightings = [
            MatchedSighting(time: day + 130, rssi: -60, metadata: metadata, attenuation: 60, scanGap: ScanGap(time: day + 130, previousScanTime: day - 59)),
            MatchedSighting(time: day + 140, rssi: -60, metadata: metadata, attenuation: 60, scanGap: ScanGap(time: day + 140, previousScanTime: day + 100)),
            MatchedSighting(time: day + 400, rssi: -60, metadata: metadata, attenuation: 60),
        ]
        let window = try #require(ExposureWindowing.windows(for: KeyMatch(key: Broadcaster().key, sightings: sightings), configuration: .init()).first)
        #expect(window.scanInstances.map(\.secondsSinceLastScan) == [180, 120])
    }

    /// A window's calibration confidence is its first sighting's.
    @Test func eachWindowTakesTheCalibrationConfidenceOfItsFirstSighting() throws {
        let day: Int64 = 1_700_006_400
        let sightings = [(0, 1), (300, 3), (1_800, 2), (2_000, 0)].map { offset, confidence in
            MatchedSighting(time: day + Int64(offset), rssi: -60, metadata: Metadata(minorVersion: 1, transmitPower: 0, calibrationConfidence: UInt8(confidence)),
                            attenuation: 60)
        }
        let result = ExposureWindowing.windows(for: KeyMatch(key: try Broadcaster().key, sightings: sightings), configuration: .init())
        #expect(result.map(\.calibrationConfidence) == [1, 2])
    }

    @Test func reportTypeAndInfectiousnessFollowTheConfiguration() throws {
        var configuration = ExposureConfigurationV2()
        configuration.reportTypeNoneMap = .selfReport
        configuration.infectiousnessForDaysSinceOnsetOfSymptoms = [0: .high, 5: .none]
        let unknownType = try Broadcaster(reportType: .unknown, daysSinceOnset: 0).key
        let window = try #require(try windows([(100, 50)], key: unknownType, configuration: configuration).first)
        #expect(window.reportType == .selfReport)
        #expect(window.infectiousness == .high)
        #expect(try windows([(100, 50)], key: Broadcaster(daysSinceOnset: 5).key, configuration: configuration).isEmpty)
        #expect(try windows([(100, 50)], key: Broadcaster(reportType: .revoked).key).isEmpty)
        #expect(try windows([(100, 50)], key: Broadcaster(daysSinceOnset: nil).key).first?.infectiousness == .standard)
    }
}

@Suite struct ScoringTests {
    let day: Int64 = 1_700_006_400

    func window(_ instances: [ScanInstance], reportType: ReportType = .confirmedTest, infectiousness: Infectiousness = .standard,
                day offset: Int64 = 0, risk: Int = 0) throws -> ExposureWindow {
        var key = try Broadcaster(risk: risk).key
        key.reportType = reportType
        return ExposureWindow(date: day + offset * 86_400, reportType: reportType, infectiousness: infectiousness,
                              calibrationConfidence: 0, scanInstances: instances, diagnosisKey: key)
    }

    func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(json.utf8))
    }

    @Test func v2WeightsAttenuationReportTypeAndInfectiousness() throws {
        let configuration = try decode(ExposureConfigurationV2.self, """
            {"attenuationDurationThresholds":[50,70,90],"immediateDurationWeight":200,"nearDurationWeight":100,
             "mediumDurationWeight":50,"otherDurationWeight":0,"reportTypeSelfReportedWeight":50,
             "infectiousnessHighWeight":200,"minimumWindowScore":60}
            """)
        let scans = [ScanInstance(minAttenuation: 40, typicalAttenuation: 50, secondsSinceLastScan: 60),   // immediate: 120
                     ScanInstance(minAttenuation: 60, typicalAttenuation: 70, secondsSinceLastScan: 60),   // near: 60
                     ScanInstance(minAttenuation: 80, typicalAttenuation: 90, secondsSinceLastScan: 60),   // medium: 30
                     ScanInstance(minAttenuation: 95, typicalAttenuation: 95, secondsSinceLastScan: 60),   // other: 0
                     ScanInstance(minAttenuation: nil, typicalAttenuation: nil, secondsSinceLastScan: 60)] // unknown: other
        let confirmed = try window(scans)
        #expect(configuration.weightedDuration(of: confirmed) == 210)
        #expect(configuration.score(of: confirmed) == 210)
        let selfReportedHigh = try window(scans, reportType: .selfReport, infectiousness: .high)
        #expect(configuration.score(of: selfReportedHigh) == 210)
        let weak = try window([ScanInstance(minAttenuation: 80, typicalAttenuation: 80, secondsSinceLastScan: 100)])  // 50 < 60
        let nextDay = try window(scans, day: 1)
        let summaries = configuration.dailySummaries(of: [confirmed, selfReportedHigh, weak, nextDay], now: day + 3 * 86_400)
        #expect(summaries == [
            DailySummary(date: day, maximumScore: 210, scoreSum: 420, weightedDurationSum: 420),
            DailySummary(date: day + 86_400, maximumScore: 210, scoreSum: 210, weightedDurationSum: 210),
        ])
    }

    @Test func v2DaysSinceLastExposureThresholdDropsOldDays() throws {
        var configuration = ExposureConfigurationV2()
        configuration.daysSinceLastExposureThreshold = 2
        let scans = [ScanInstance(minAttenuation: 40, typicalAttenuation: 40, secondsSinceLastScan: 60)]
        let summaries = configuration.dailySummaries(of: [try window(scans), try window(scans, day: 2)], now: day + 3 * 86_400 + 5)
        #expect(summaries.map(\.date) == [day + 2 * 86_400])
    }

    @Test func v1MultipliesLevelValuesAsApplesSampleConfigurationSays() throws {
        let configuration = try decode(ExposureConfigurationV1.self, """
            {"minimumRiskScore":0,"attenuationLevelValues":[1,2,3,4,5,6,7,8],"attenuationWeight":50,
             "daysSinceLastExposureLevelValues":[1,2,3,4,5,6,7,8],"daysSinceLastExposureWeight":50,
             "durationLevelValues":[1,2,3,4,5,6,7,8],"durationWeight":50,
             "transmissionRiskLevelValues":[1,2,3,4,5,6,7,8],"transmissionRiskWeight":50,
             "attenuationDurationThresholds":[50,74]}
            """)
        // Three scans 4 minutes apart at 60 dB, of a key of 3 days ago with transmission risk 4:
        // Google's findExposures makes one exposure of (480 + 300) s, 900 s in 5-minute steps.
        let key = DiagnosisKey(key: TemporaryExposureKey(keyData: Bytes16(high: 1, low: 2), rollingStartIntervalNumber: ENIntervalNumber(unixSeconds: day)!,
                                                         transmissionRiskLevel: 4))
        let match = V1Match(key: key, sightings: [0, 240, 480].map { V1Sighting(time: day + 3_600 + $0, attenuation: 60) })
        let info = try #require(configuration.exposureInfos(of: [match], now: day + 3 * 86_400 + 600).first)
        // attenuation 60: >51 → level 3; 3 days: >=2 → level 7; 15 min: <=15 → level 4; risk 4 → 4.
        #expect(info.totalRiskScore == 3 * 7 * 4 * 4)
        #expect(info.durationMinutes == 15)
        #expect(info.attenuationValue == 60)
        #expect(info.attenuationDurationsMinutes == [0, 15, 0], "780 s between the thresholds, the ends stretched 150 s each")
        #expect(info.daysSinceExposure == 3)

        var strict = configuration
        strict.minimumRiskScore = 400
        let summary = strict.summary(of: [match], now: day + 3 * 86_400)
        #expect(summary.maximumRiskScore == 0 && summary.matchedKeyCount == 1 && summary.daysSinceLastExposure == 3)
    }

    /// A key's exposures come in time order, as findExposures lists them, whatever their risk
    /// scores; keys by day, keys of one day in the matches' order.
    @Test func v1ExposureInfosKeepGooglesOrder() {
        let configuration = ExposureConfigurationV1()
        let key = { (low: UInt64, day: Int64) in
            DiagnosisKey(key: TemporaryExposureKey(keyData: Bytes16(high: 1, low: low), rollingStartIntervalNumber: ENIntervalNumber(unixSeconds: day)!,
                                                   transmissionRiskLevel: 4))
        }
        // Runs of sightings 40 minutes apart: 15 minutes, 5, 10, 5 (a longer one scores more).
        let runs: [Int64] = [0, 240, 480, 720, 3_120, 5_520, 5_760, 8_160]
        let sightings = runs.map { V1Sighting(time: day + 3_600 + $0, attenuation: 60) }
        let twoDays = V1Match(key: key(2, day + 86_400), sightings: sightings.map { V1Sighting(time: $0.time + 86_400, attenuation: 60) })
        let matches = [twoDays, V1Match(key: key(3, day), sightings: sightings), V1Match(key: key(4, day), sightings: Array(sightings.prefix(1)))]
        let infos = configuration.exposureInfos(of: matches, now: day + 5 * 86_400)
        #expect(infos.map(\.date) == [day, day, day, day, day, day + 86_400, day + 86_400, day + 86_400, day + 86_400])
        #expect(infos.map(\.durationMinutes) == [15, 5, 10, 5, 5, 15, 5, 10, 5], "each key's runs in time order")
    }

    @Test func v1LevelBucketsFollowTheSpec() {
        #expect([74, 73, 64, 63, 52, 51, 34, 33, 28, 27, 16, 15, 11, 10, 0].map(ExposureConfigurationV1.attenuationLevel)
                == [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8])
        #expect(ExposureConfigurationV1.attenuationLevel(nil) == 1)
        #expect([14, 13, 12, 11, 10, 8, 6, 4, 2, 1, 0].map(ExposureConfigurationV1.daysSinceExposureLevel)
                == [1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 8])
        #expect([0, 1, 5, 6, 10, 15, 20, 25, 30, 31].map { ExposureConfigurationV1.durationLevel(minutes: $0) }
                == [1, 2, 2, 3, 3, 4, 5, 6, 7, 8])
    }

    @Test(arguments: [
        (#"{"attenuationLevelValues":[1,2,3]}"#, "attenuationLevelValues"),
        (#"{"attenuationLevelValues":[1,2,3,4,5,6,7,9]}"#, "attenuationLevelValues"),
        (#"{"immediateDurationWeight":251}"#, "immediateDurationWeight"),
        (#"{"attenuationDurationThresholds":[70,50,90]}"#, "attenuationDurationThresholds"),
        (#"{"attenuationDurationThresholds":"50"}"#, "attenuationDurationThresholds"),
        (#"{"reportTypeNoneMap":5}"#, "reportTypeNoneMap"),
        (#"{"infectiousnessForDaysSinceOnsetOfSymptoms":{"15":1}}"#, "infectiousnessForDaysSinceOnsetOfSymptoms"),
        (#"{"minimumRiskscore":3}"#, "minimumRiskscore"),
    ])
    func invalidConfigurationsNameTheKey(json: String, key: String) throws {
        expectError({ try self.decode(ExposureConfiguration.self, json) }) { error in
            (error as? ConfigurationError)?.key == key
        }
    }

    @Test func aConfigurationWithoutV1KeysHasNoV1Part() throws {
        #expect(try decode(ExposureConfiguration.self, #"{"nearDurationWeight":80}"#).v1 == nil)
        #expect(try decode(ExposureConfiguration.self, #"{"minimumRiskScore":1}"#).v1?.minimumRiskScore == 1)
        #expect(try decode(ExposureConfiguration.self, #"{"attenuationDurationThresholds":[40,60]}"#).v2.attenuationThresholds == [50, 70, 90])
    }
}
