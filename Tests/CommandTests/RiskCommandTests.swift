import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Testing

/// `enctl risk --windows --risk-config`: the Corona-Warn-App's 29 shared cases, every field, and
/// bad input refused with exit status 64 naming the field.
@Suite struct RiskCommandTests {
    let directory = TemporaryDirectory()

    func risk(windows: Data, configuration: Data? = CoronaWarnAppCases.configuration, json: Bool = true) throws -> Command.Result {
        let windowsPath = directory.file("windows-\(UUID().uuidString).json"), configurationPath = directory.file("risk-\(UUID().uuidString).json")
        try windows.write(to: URL(fileURLWithPath: windowsPath))
        var arguments = ["risk", "--windows", windowsPath] + (json ? ["--json"] : [])
        if let configuration {
            try configuration.write(to: URL(fileURLWithPath: configurationPath))
            arguments += ["--risk-config", configurationPath]
        }
        return try Command.enctl(arguments)
    }

    @Test(arguments: CoronaWarnAppCases.all)
    func caseGivesCoronaWarnAppsAggregate(_ testCase: CoronaWarnAppCases.Case) throws {
        let result = try risk(windows: testCase.json)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try JSONDecoder().decode(RiskAggregate.self, from: Data(result.standardOutput.utf8)) == testCase.expected)
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        #expect(report?["model"] as? String == "corona-warn-app")
        #expect(report?["risk"] as? String == (testCase.expected.totalRiskLevel == 2 ? "increased" : testCase.expected.numberOfDaysWithLowRisk > 0 ? "low" : "none"))
    }

    @Test func withoutAConfigurationTheStandardRulesJudge() throws {
        let far = #"[{"ageInDays": 2, "reportType": 1, "infectiousness": 1, "calibrationConfidence": 0, "scanInstances": [{"minAttenuation": 105, "typicalAttenuation": 105, "secondsSinceLastScan": 120}]}]"#
        let result = try risk(windows: Data(far.utf8), configuration: nil)
        #expect(result.status == 0)
        let report = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        #expect(report?["risk"] as? String == "none" && report?["model"] as? String == "en-express")
        let text = try risk(windows: Data(far.utf8), configuration: nil, json: false)
        #expect(text.status == 0 && text.standardOutput.contains("No risk") && !text.standardOutput.contains("exposed"), "\(text.standardOutput)")
    }

    @Test func badInputIsRefusedWithExit64NamingTheField() throws {
        let windows = CoronaWarnAppCases.all[0].json
        let negative = String(decoding: CoronaWarnAppCases.configuration, as: UTF8.self).replacingOccurrences(of: #""weight":0.8"#, with: #""weight":-0.8"#)
        #expect(negative != String(decoding: CoronaWarnAppCases.configuration, as: UTF8.self))
        let refused = try risk(windows: windows, configuration: Data(negative.utf8))
        #expect(refused.status == 64 && refused.standardError.contains("minutesAtAttenuationWeights[0].weight"), "\(refused.standardError)")
        #expect(refused.standardOutput.isEmpty)
        let unknownType = try risk(windows: Data(#"[{"ageInDays": 1, "reportType": 7, "infectiousness": 1, "calibrationConfidence": 0, "scanInstances": []}]"#.utf8))
        #expect(unknownType.status == 64 && unknownType.standardError.contains("[0].reportType"), "\(unknownType.standardError)")
        let unknownKey = try risk(windows: windows, configuration: Data(#"{"model": "en-express", "alertWeightedMinutesPerDay": 15, "alertAt": 3}"#.utf8))
        #expect(unknownKey.status == 64 && unknownKey.standardError.contains("\"alertAt\""), "\(unknownKey.standardError)")
        let alone = try Command.enctl(["risk", "--risk-config", "/dev/null"])
        #expect(alone.status == 64, "\(alone.standardError)")
    }
}

/// enagentd's verdict, by the risk configuration enagent.conf names, is what `enctl risk` computes
/// from the windows the daemon reports; a refused configuration leaves the last good one in force.
@Suite struct DaemonRiskTests {
    let directory = TemporaryDirectory()

    static func json(_ result: Command.Result) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "\(result.standardError)")
    }

    @Test func theDaemonsVerdictIsTheCommandsOnTheSameWindows() throws {
        let signer = try P256PrivateKey()
        let riskFile = directory.file("risk-configuration.json")
        try CoronaWarnAppCases.configuration.write(to: URL(fileURLWithPath: riskFile))
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer, configuration: "risk-configuration = \(riskFile)\n")
        #expect(try service.enctl("risk").standardOutput.contains("No verdict yet"))

        let now = Int64(Date().timeIntervalSince1970)
        let today = ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue
        // Close for 20 minutes two days ago (increased), at 65 dB twice yesterday (low), far once yesterday.
        let close = try Broadcaster(start: today - 288), near = try Broadcaster(start: today - 144), far = try Broadcaster(start: today - 144)
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.record(try (0..<20).map { try close.sighting(at: close.start + 3_600 + Int64($0) * 60, rssi: -55) })
        try store.record(try (0..<2).map { try near.sighting(at: near.start + 7_200 + Int64($0) * 60, rssi: -75) })
        try store.record([try far.sighting(at: far.start + 9_000, rssi: -100)])
        let file = directory.file("export.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "1", keyVersion: "v1")))
            .zip(keys: [close.key, near.key, far.key]).write(to: URL(fileURLWithPath: file))
        #expect(try service.enctl("detect", file).status == 0)

        let daemon = try Self.json(try service.enctl("risk", "--json"))
        // The windows the daemon reports, as the Corona-Warn-App's cases write them.
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(try service.enctl("windows", "--json").standardOutput.utf8)) as? [[String: Any]])
        #expect(rows.count == 3)
        let todayStart = now - now % 86_400
        let windows: [[String: Any]] = try rows.map { row in
            let date = try #require(try Date((row["date"] as? String ?? "") + "T00:00:00Z", strategy: .iso8601))
            return ["ageInDays": (todayStart - Int64(date.timeIntervalSince1970)) / 86_400,
                    "reportType": ["confirmedTest": 1, "confirmedClinicalDiagnosis": 2, "selfReport": 3, "recursive": 4][row["reportType"] as? String ?? ""] ?? 0,
                    "infectiousness": ["standard": 1, "high": 2][row["infectiousness"] as? String ?? ""] ?? 0,
                    "calibrationConfidence": row["calibrationConfidence"] ?? 0, "scanInstances": row["scanInstances"] ?? []]
        }
        let windowsFile = directory.file("windows.json")
        try JSONSerialization.data(withJSONObject: windows).write(to: URL(fileURLWithPath: windowsFile))
        let command = try Self.json(try Command.enctl(["risk", "--windows", windowsFile, "--risk-config", riskFile, "--json"]))
        for field in ["risk", "model", "totalRiskLevel", "ageOfMostRecentDateWithLowRisk", "ageOfMostRecentDateWithHighRisk", "numberOfDaysWithLowRisk",
                      "numberOfDaysWithHighRisk", "totalMinimumDistinctEncountersWithLowRisk", "totalMinimumDistinctEncountersWithHighRisk",
                      "mostRecentDateWithLowRisk", "mostRecentDateWithHighRisk"] {
            #expect("\(daemon[field] ?? "absent")" == "\(command[field] ?? "absent")", "\(field): the daemon's \(daemon), the command's \(command)")
        }
        #expect(daemon["risk"] as? String == "increased" && daemon["numberOfDaysWithLowRisk"] as? Int == 1, "\(daemon)")

        // A refused file: named in the journal, the last good one stays.
        try Data(#"{"minutesAtAttenuationWeights": [{"attenuationRange": {"min": 9, "max": 1}, "weight": 1}]}"#.utf8).write(to: URL(fileURLWithPath: riskFile))
        let again = try Broadcaster(start: today - 144)
        try store.record([try again.sighting(at: again.start + 600, rssi: -60)])
        let second = directory.file("second.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "1", keyVersion: "v1")))
            .zip(keys: [again.key]).write(to: URL(fileURLWithPath: second))
        #expect(try service.enctl("detect", second).status == 0, "a refused risk configuration fails no detection")
        #expect(try Self.json(try service.enctl("risk", "--json"))["model"] as? String == "corona-warn-app")
        service.daemon.terminate()
        service.daemon.waitForExit()
        let log = service.daemon.standardError()
        #expect(log.contains("the risk configuration \(riskFile) is refused") && log.contains("minutesAtAttenuationWeights[0].attenuationRange")
                && log.contains("the last good one (corona-warn-app)"), "\(log)")
    }
}
