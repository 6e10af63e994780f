import ENCore
import ENKeyFileWriter
import ENKeyFiles
import Foundation
import TestSupport
import Testing

/// `enctl detect offline` on the scenarios Google's own matching code ran
/// (Tests/ENCoreTests/Fixtures/google-matching): every window, daily summary and v1 exposure as Google's.
@Suite struct GoogleMatchingCommandTests {
    let directory = TemporaryDirectory()

    @Test(arguments: GoogleMatchingFixture.scenarios.scenarios)
    func detectOfflineFindsWhatGooglesCodeFound(scenario: GoogleMatchingFixture.Scenario) throws {
        let report = try detectOffline(scenario)
        let windows = try #require(report["exposureWindows"] as? [[String: Any]]).map(Window.init).sorted()
        let google = scenario.expected.exposureWindows.map { Window($0, tek: scenario.keys[$0.key].tek) }.sorted()
        #expect(windows == google)

        let days = try #require(report["dailySummaries"] as? [[String: Any]])
        let expectedDays = scenario.expected.dailySummaries
        #expect(days.map { $0["date"] as? String } == expectedDays.map { Self.date(daysSinceEpoch: $0.daysSinceEpoch) })
        for (day, google) in zip(days, expectedDays) {
            for (name, value) in [("maximumScore", google.summaryData.maximumScore), ("scoreSum", google.summaryData.scoreSum),
                                  ("weightedDurationSum", google.summaryData.weightedDurationSum)] {
                let reported = try #require(day[name] as? Double, "\(name)")
                #expect(abs(reported - value) <= 1e-9 * max(1, abs(value)), "\(name) of \(day["date"] ?? "?"): \(reported), Google \(value)")
            }
        }
    }

    @Test(arguments: GoogleMatchingFixture.scenarios.scenarios)
    func detectOfflineScoresV1AsGooglesCodeDid(scenario: GoogleMatchingFixture.Scenario) throws {
        let report = try detectOffline(scenario)
        let v1 = try #require(report["v1"] as? [String: Any])
        let infos = try #require(v1["exposureInfos"] as? [[String: Any]]).map { info in
            try ["date", "durationMinutes", "attenuationValue", "transmissionRiskLevel", "totalRiskScore", "daysSinceExposure"]
                .map { try #require(info[$0] as? Int, "\($0)") }
        }.sorted { $0.lexicographicallyPrecedes($1) }
        let now = GoogleMatchingFixture.scenarios.now
        let google = scenario.expected.v1ExposureResults.flatMap { result in
            let start = result.dateMillisSinceEpoch / 1_000
            return result.exposureRecords.map { record in
                [Int(start / 86_400 * 86_400), min(30, record.durationSeconds / 60), record.attenuationValue, record.transmissionRiskLevel,
                 record.riskScore, Int((now - start) / 86_400)]
            }
        }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(infos == google)
        let summary = try #require(v1["summary"] as? [String: Any])
        #expect(summary["matchedKeyCount"] as? Int == scenario.expected.v1ExposureResults.count)
        #expect(summary["maximumRiskScore"] as? Int == scenario.expected.v1ExposureResults.map(\.maxRiskScore).max() ?? 0)
        #expect(summary["summationRiskScore"] as? Int == scenario.expected.v1ExposureResults.reduce(0) { $0 + $1.totalRiskScore })
    }

    /// enctl detect offline's JSON report on the scenario: its keys in a signed file, its sightings and configurations.
    func detectOffline(_ scenario: GoogleMatchingFixture.Scenario) throws -> [String: Any] {
        let signer = try P256PrivateKey()
        let keys = directory.file("keys.zip"), publicKey = directory.file("authority.pem")
        let sightings = directory.file("sightings.jsonl"), config = directory.file("config.json")
        try signer.publicKey.pem.write(toFile: publicKey, atomically: true, encoding: .utf8)
        let writer = KeyExportWriter(region: "GO", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "001", keyVersion: "v1")))
        try writer.zip(keys: try scenario.diagnosisKeys).write(to: URL(fileURLWithPath: keys))
        try scenario.jsonLines.write(toFile: sightings, atomically: true, encoding: .utf8)
        try scenario.configurationJSON.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try Command.enctl("detect", "offline", "--sightings", sightings, "--keys", keys, "--public-key", publicKey,
                                       "--config", config, "--now", "\(GoogleMatchingFixture.scenarios.now)", "--json")
        #expect(result.status == 0, "\(result.standardError)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    static func date(daysSinceEpoch: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(daysSinceEpoch * 86_400)))
    }

    /// A window as enctl's JSON and Google's result both tell it.
    struct Window: Comparable, CustomStringConvertible {
        var tek: String, date: String, reportType: String, infectiousness: String, calibrationConfidence: Int
        var scans: [[Int]]

        init(_ json: [String: Any]) throws {
            tek = try #require((json["key"] as? [String: Any])?["tek"] as? String)
            date = try #require(json["date"] as? String)
            reportType = try #require(json["reportType"] as? String)
            infectiousness = try #require(json["infectiousness"] as? String)
            calibrationConfidence = try #require(json["calibrationConfidence"] as? Int)
            scans = try #require(json["scanInstances"] as? [[String: Any]]).map { scan in
                try ["minAttenuation", "typicalAttenuation", "secondsSinceLastScan"].map { try #require(scan[$0] as? Int, "\($0)") }
            }
        }

        init(_ google: GoogleMatchingFixture.Window, tek: String) {
            self.tek = tek
            date = GoogleMatchingCommandTests.date(daysSinceEpoch: google.daysSinceEpoch)
            reportType = "\(ReportType(rawValue: google.reportType)!)"
            infectiousness = "\(Infectiousness(rawValue: google.infectiousness)!)"
            calibrationConfidence = google.calibrationConfidence
            scans = google.scanInstances.map { [$0.minAttenuation, $0.typicalAttenuation, $0.secondsSinceLastScan] }
        }

        var description: String { "\(tek) \(date) \(reportType) \(infectiousness) confidence \(calibrationConfidence) scans \(scans)" }

        static func < (lhs: Window, rhs: Window) -> Bool { lhs.description < rhs.description }
    }
}
