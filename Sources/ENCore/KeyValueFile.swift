import FoundationEssentials
import Glibc

/// The text of a `key = value` configuration file: `#` starts a comment, blank lines are
/// ignored. enagentd's configuration and enctl's key server configuration share it, so both
/// read and report errors the same way.
public struct KeyValueFile: Sendable {
    public struct Line: Sendable {
        /// 1-based, for error messages.
        public let number: Int
        public let key: String
        public let value: String
    }

    /// Why a configuration file was refused: the file, the line and what is wrong.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public let path: String
        public let line: Int
        public let reason: String
        public var description: String { "\(path):\(line): \(reason)" }
    }

    public let path: String
    public let lines: [Line]

    /// Reads `text`, the contents of the file at `path` (named in errors).
    public init(text: String, path: String) throws(Error) {
        self.path = path
        var lines = [Line]()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !content.allSatisfy(\.isWhitespace) else { continue }
            let parts = content.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw Error(path: path, line: index + 1, reason: "expected key = value")
            }
            lines.append(Line(number: index + 1, key: parts[0], value: parts[1]))
        }
        self.lines = lines
    }

    /// A yes/no value (yes, true, on, 1 / no, false, off, 0, in any case); nil for anything else.
    public static func boolean(_ value: String) -> Bool? {
        switch value.lowercased() {
        case "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: return nil
        }
    }

    /// The error for `line` of this file.
    public func error(at line: Line, _ reason: String) -> Error {
        Error(path: path, line: line.number, reason: reason)
    }
}
