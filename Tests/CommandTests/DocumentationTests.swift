import ENAgent
import ENCore
import Foundation
import TestSupport
import Testing

/// What the help and the man pages say is taken from, or checked against, the code.
@Suite struct DocumentationTests {
    @Test func statusHelpListsEveryStatus() throws {
        let help = try Command.enctl("status", "--help")
        #expect(help.status == 0)
        // The help wraps its lines: compare without them.
        let text = help.standardOutput.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for status in AgentStatus.allCases {
            #expect(text.contains(status.rawValue), "enctl status --help does not name \(status.rawValue): \(text)")
        }
    }
}

/// enagent.conf(5), `enagentd --help` and the configuration's parser name the same keys and
/// options, and the command line refuses what the file refuses, with the same words.
@Suite struct ConfigurationDocumentationTests {
    /// Keys that only the file sets, and the one option whose name is not its key's.
    static let fileOnly: Set = ["trusted-keys-directory", "risk-configuration", "rssi-correction", AgentConfiguration.adapterCorrectionPrefix + "ADDRESS"]
    static let optionNames = ["state-directory": "state-dir"]
    static let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The man page's keys, each with the text of its entry.
    static func manPageKeys() throws -> [String: String] {
        let page = try String(contentsOf: project.appendingPathComponent("man/enagent.conf.5"), encoding: .utf8)
        var entries = [String: String](), current: String?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(".BI \"") {
                let key = line.dropFirst(5).prefix { $0 != " " && $0 != "\"" }
                current = key.hasSuffix(".") ? String(key) + "ADDRESS" : String(key)
                entries[current!] = ""
            } else if line.hasPrefix(".SH") {
                current = nil
            } else if let key = current {
                entries[key, default: ""] += line + "\n"
            }
        }
        return entries
    }

    @Test func theManPageTheHelpAndTheParserNameTheSameKeys() throws {
        let documented = try Self.manPageKeys()
        #expect(Set(documented.keys) == Set(AgentConfiguration.keys), "enagent.conf(5) vs AgentConfiguration.keys")
        let help = try Command.run(Command.executable("enagentd").path, ["--help"])
        let options = Set(help.standardOutput.split(separator: "\n").compactMap { line -> String? in
            let text = line.drop { $0 == " " }
            guard text.hasPrefix("--"), !text.hasPrefix("--no-") else { return nil }
            return String(text.dropFirst(2).prefix { $0.isLetter || $0 == "-" })
        })
        let expected = Set(AgentConfiguration.keys.filter { !Self.fileOnly.contains($0) }.map { Self.optionNames[$0] ?? $0 })
        #expect(options == expected.union(["config", "verbose", "version"]), "enagentd --help vs the keys: \(options.symmetricDifference(expected))")
        for key in AgentConfiguration.keys where !Self.fileOnly.contains(key) {
            let option = "\\-\\-" + (Self.optionNames[key] ?? key).replacing("-", with: "\\-")
            #expect(documented[key]?.contains(option) == true, "enagent.conf(5) names no option for \(key)")
        }
    }

    /// An entry of the man page as it reads: troff's font requests and escaped hyphens gone.
    static func plain(_ entry: String) -> String {
        entry.split(separator: "\n").map { line in
            let words = line.split(separator: " ", maxSplits: 1)
            return (words.first?.hasPrefix(".") == true ? words.dropFirst().joined() : String(line)).replacing("\\-", with: "-")
        }.joined(separator: " ")
    }

    /// enagent.conf(5) states each setting's default and its greatest value as the setting's type
    /// has them: a change of either fails here until the page says it.
    @Test func theManPageStatesEachSettingsDefaultAndGreatestValue() throws {
        func facts<S: BoundedSetting>(_ setting: S.Type) -> (key: String, standard: String, greatest: String?) {
            (S.key, S.standardText, "\(S.range.upperBound)")
        }
        let settings = [facts(ScanSeconds.self), facts(ScanIntervalSeconds.self), facts(RetentionDays.self), facts(DiskReserveMebibytes.self),
                        facts(TxPower.self), (RotationSeconds.key, RotationSeconds.standardText, nil)]
        let documented = try Self.manPageKeys().mapValues(Self.plain)
        for (key, standard, greatest) in settings {
            let entry = documented[key] ?? ""
            #expect(entry.contains("Default: \(standard)"), "enagent.conf(5), \(key): \(entry)")
            if let greatest { #expect(entry.contains("to \(greatest)") || entry.contains("at most \(greatest)"), "enagent.conf(5), \(key): \(entry)") }
        }
    }

    /// The same value refused by enagent.conf and by enagentd's option, for the same reason.
    @Test(arguments: [("state-directory", "relative/state"), ("retention-days", "0"), ("adapter", "wlan0"), ("adapter", "hci01"),
                      ("tx-power", "40"), ("tx-power", "-128"), ("rotation-seconds", "1200-600"), ("scan-seconds", "0"),
                      ("scan-interval-seconds", "301")])
    func theCommandLineRefusesWhatTheFileRefuses(key: String, value: String) throws {
        let reason: String
        do {
            _ = try AgentConfiguration(text: "\(key) = \(value)", path: "enagent.conf")
            Issue.record("enagent.conf took \(key) = \(value)")
            return
        } catch {
            reason = String(error.reason.dropFirst(key.count + 1))
        }
        let option = "--" + (Self.optionNames[key] ?? key)
        // A daemon that took the value would start: on a state directory of the test's, never the system's.
        let directory = TemporaryDirectory()
        let file = directory.file("enagent.conf")
        try "state-directory = \(directory.file("state"))\nradio = no\n".write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Command.run(Command.executable("enagentd").path, ["--config", file, "\(option)=\(value)"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("'\(option) ") && result.standardError.contains(": " + reason), "file: \(reason); command line: \(result.standardError)")
    }
}
