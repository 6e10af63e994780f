import ENCore
import Foundation
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
