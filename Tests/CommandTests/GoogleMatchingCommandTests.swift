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
        let windows = try #require(report["exposureWindows"] as? [[String: Any]]).map(Self.window).sorted()
        #expect(windows == scenario.expectedWindows())
        let days = try #require(report["dailySummaries"] as? [[String: Any]]).map { day in
            DailySummary(date: try Self.unixDay(try #require(day["date"] as? String)), maximumScore: try #require(day["maximumScore"] as? Double),
                         scoreSum: try #require(day["scoreSum"] as? Double), weightedDurationSum: try #require(day["weightedDurationSum"] as? Double))
        }
        scenario.expectDailySummaries(days)
    }

    @Test(arguments: GoogleMatchingFixture.scenarios.scenarios)
    func detectOfflineScoresV1AsGooglesCodeDid(scenario: GoogleMatchingFixture.Scenario) throws {
        let report = try detectOffline(scenario)
        let v1 = try #require(report["v1"] as? [String: Any])
        let infos = try #require(v1["exposureInfos"] as? [[String: Any]]).map { info in
            let number = { (name: String) throws -> Int in try #require(info[name] as? Int, "\(name)") }
            return ExposureInfo(date: Int64(try number("date")), durationMinutes: try number("durationMinutes"),
                                attenuationValue: try number("attenuationValue"),
                                attenuationDurationsMinutes: try #require(info["attenuationDurationsMinutes"] as? [Int]),
                                transmissionRiskLevel: try number("transmissionRiskLevel"), totalRiskScore: try number("totalRiskScore"),
                                daysSinceExposure: try number("daysSinceExposure"))
        }
        let now = GoogleMatchingFixture.scenarios.now
        #expect(infos == scenario.expectedExposureInfos(now: now), "in Google's order")
        let summary = try #require(v1["summary"] as? [String: Any])
        let fields = GoogleMatchingFixture.Scenario.V1SummaryFields(
            daysSinceLastExposure: summary["daysSinceLastExposure"] as? Int, matchedKeyCount: try #require(summary["matchedKeyCount"] as? Int),
            maximumRiskScore: try #require(summary["maximumRiskScore"] as? Int), summationRiskScore: try #require(summary["summationRiskScore"] as? Int),
            attenuationDurationsMinutes: try #require(summary["attenuationDurationsMinutes"] as? [Int]))
        #expect(fields == scenario.expectedV1Summary(now: now))
    }

    /// enctl detect offline's JSON report on the scenario: its keys in a signed file, its sightings, configurations and RSSI corrections.
    func detectOffline(_ scenario: GoogleMatchingFixture.Scenario) throws -> [String: Any] {
        let signer = try P256PrivateKey()
        let keys = directory.file("keys.zip"), publicKey = directory.file("authority.pem")
        let sightings = directory.file("sightings.jsonl"), config = directory.file("config.json")
        try signer.publicKey.pem.write(toFile: publicKey, atomically: true, encoding: .utf8)
        let writer = KeyExportWriter(region: "GO", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "001", keyVersion: "v1")))
        try writer.zip(keys: try scenario.diagnosisKeys).write(to: URL(fileURLWithPath: keys))
        try scenario.jsonLines.write(toFile: sightings, atomically: true, encoding: .utf8)
        try scenario.configurationJSON.write(toFile: config, atomically: true, encoding: .utf8)
        let result = try Command.enctl(["detect", "offline", "--sightings", sightings, "--keys", keys, "--public-key", publicKey,
                                        "--config", config, "--now", "\(GoogleMatchingFixture.scenarios.now)", "--json"]
                                       + scenario.rssiCorrectionArguments)
        #expect(result.status == 0, "\(result.standardError)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    /// A day as enctl's JSON writes it (YYYY-MM-DD, UTC), in unix seconds of its midnight.
    static func unixDay(_ text: String) throws -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return Int64(try #require(formatter.date(from: text), "a day: \(text)").timeIntervalSince1970)
    }

    /// A window of enctl's JSON report, with its key.
    static func window(_ json: [String: Any]) throws -> GoogleMatchingFixture.Scenario.ComparableWindow {
        let reportType = try #require(json["reportType"] as? String), infectiousness = try #require(json["infectiousness"] as? String)
        return GoogleMatchingFixture.Scenario.ComparableWindow(
            tek: try #require((json["key"] as? [String: Any])?["tek"] as? String), date: try unixDay(try #require(json["date"] as? String)),
            reportType: try #require(ReportType.allCases.first { "\($0)" == reportType }, "\(reportType)"),
            infectiousness: try #require(Infectiousness.allCases.first { "\($0)" == infectiousness }, "\(infectiousness)"),
            calibrationConfidence: try #require(json["calibrationConfidence"] as? Int),
            scans: try #require(json["scanInstances"] as? [[String: Any]]).map { scan in
                let number = { (name: String) throws -> Int in try #require(scan[name] as? Int, "\(name)") }
                return ScanInstance(minAttenuation: try number("minAttenuation"), typicalAttenuation: try number("typicalAttenuation"),
                                    secondsSinceLastScan: try number("secondsSinceLastScan"))
            })
    }
}
