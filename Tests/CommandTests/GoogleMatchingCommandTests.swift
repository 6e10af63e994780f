import ENCore
import ENKeyFileWriter
import ENKeyFiles
import Foundation
import TestSupport
import Testing

/// `enctl detect offline` on the scenarios Google's own matching code ran
/// (Tests/ENCoreTests/Fixtures/google-matching): every window and daily summary as Google's.
@Suite struct GoogleMatchingCommandTests {
    let directory = TemporaryDirectory()

    @Test(arguments: GoogleMatchingFixture.scenarios.scenarios)
    func detectOfflineFindsWhatGooglesCodeFound(scenario: GoogleMatchingFixture.Scenario) throws {
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
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])

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
