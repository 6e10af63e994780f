import ENAPI
import Foundation
import Testing

/// The names the daemon puts on the bus come from ENAPI only: a name written out as a literal
/// elsewhere is one that a typo changes without any test noticing.
@Suite struct ContractNamesTests {
    typealias API = ExposureNotificationAPI

    static var memberNames: Set<String> {
        Set(API.Methods.all.map(\.name) + AgentProperties.declarations.map(\.name) + API.Signals.declarations.map(\.name)
            + API.Failure.allCases.flatMap { [$0.rawValue, $0.name] })
    }

    /// Every string literal of the daemon's sources that is one of the interface's member names.
    static func literalMemberNames(in directory: URL) throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter { $0.pathExtension == "swift" }
        let literal = try NSRegularExpression(pattern: #""([A-Za-z.0-9]+)""#)
        return try files.flatMap { file -> [String] in
            let text = try String(contentsOf: file, encoding: .utf8)
            return literal.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
                let name = String(text[Range(match.range(at: 1), in: text)!])
                return memberNames.contains(name) ? "\(file.lastPathComponent): \"\(name)\"" : nil
            }
        }
    }

    @Test func theDaemonNamesMembersOnlyThroughENAPI() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/enagentd").standardized
        #expect(Self.memberNames.contains("Status") && Self.memberNames.contains("ExposureDetected") && Self.memberNames.contains("SetEnabled"))
        let found = try Self.literalMemberNames(in: sources)
        #expect(found.isEmpty, "member names written out instead of taken from ENAPI: \(found)")
    }

    /// The check finds such a literal (it would pass on an empty directory too otherwise).
    @Test func aLiteralMemberNameIsFound() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("contract-names-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try #"onChange?(["Status"])"#.write(to: directory.appendingPathComponent("x.swift"), atomically: true, encoding: .utf8)
        #expect(try Self.literalMemberNames(in: directory) == [#"x.swift: "Status""#])
    }
}
