import FoundationEssentials
import Glibc

/// How much a record matters, as syslog and the journal number it (PRIORITY=).
public enum LogLevel: Int32, Comparable, Sendable, CustomStringConvertible {
    case critical = 2, error = 3, warning = 4, notice = 5, info = 6, debug = 7

    /// More severe is greater: a logger at `.info` writes what is `>= .info`.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue > rhs.rawValue }

    public var description: String {
        switch self {
        case .critical: "critical"
        case .error: "error"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }
}

/// An event an administrator filters on: its record carries a fixed MESSAGE_ID
/// (`journalctl MESSAGE_ID=…`), the same in every release.
public struct LogEvent: Sendable, Equatable {
    public let name: String
    /// 128 bits as 32 hex digits, as the journal takes it.
    public let messageID: String

    public static let consentGiven = LogEvent(name: "consent given", messageID: "e4df84d666ce40ba8fed2d848ad4b854")
    public static let consentWithdrawn = LogEvent(name: "consent withdrawn", messageID: "5b7707d0ffeb44c9882d75e15201ce0f")
    public static let detectionFinished = LogEvent(name: "detection finished", messageID: "6a603fa9859a49049400c9a4e3b4fbbb")
    public static let radioLost = LogEvent(name: "radio lost", messageID: "bf6b70efc6f64283ae356de4d8b269dc")
    public static let radioBack = LogEvent(name: "radio back", messageID: "d0e1a901c00540f5ad04f8124de4c5f8")
    public static let storeFull = LogEvent(name: "store full", messageID: "efa7aedf3087442bb62eeffd48efb96c")

    public static let all = [consentGiven, consentWithdrawn, detectionFinished, radioLost, radioBack, storeFull]
}

/// One record, as a sink receives it.
public struct LogRecord: Sendable, Equatable {
    public var level: LogLevel
    public var message: String
    /// Which part of the program wrote it (the logger's label).
    public var label: String
    public var event: LogEvent?
    public var metadata: [String: String]

    public init(level: LogLevel, message: String, label: String, event: LogEvent? = nil, metadata: [String: String] = [:]) {
        (self.level, self.message, self.label, self.event, self.metadata) = (level, message, label, event, metadata)
    }
}

/// Where records go: the journal, stderr, or a test's list.
public protocol LogSink: Sendable {
    func write(_ record: LogRecord)
}

/// A logger: a label, the least level it writes, and its sink. Messages are built only when
/// their level is written. Never give it a key or an identifier.
public struct Logger: Sendable {
    public let label: String
    public var level: LogLevel
    private let sink: any LogSink

    /// `sink` defaults to the journal when stderr is the journal (under systemd), else stderr.
    public init(label: String, level: LogLevel = .info, sink: (any LogSink)? = nil) {
        self.label = label
        self.level = level
        self.sink = sink ?? (JournalLog.standardErrorIsJournal ? JournalLog() as any LogSink : StandardErrorLog())
    }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, event: LogEvent? = nil,
                    metadata: @autoclosure () -> [String: String] = [:]) {
        guard level >= self.level else { return }
        sink.write(LogRecord(level: level, message: message(), label: label, event: event, metadata: metadata()))
    }

    public func debug(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.debug, message(), event: event, metadata: metadata())
    }

    public func info(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.info, message(), event: event, metadata: metadata())
    }

    public func notice(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.notice, message(), event: event, metadata: metadata())
    }

    public func warning(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.warning, message(), event: event, metadata: metadata())
    }

    public func error(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.error, message(), event: event, metadata: metadata())
    }

    public func critical(_ message: @autoclosure () -> String, event: LogEvent? = nil, metadata: @autoclosure () -> [String: String] = [:]) {
        log(.critical, message(), event: event, metadata: metadata())
    }
}

/// Plain lines on stderr, outside systemd: "TIME LEVEL LABEL: MESSAGE key=value …", the time UTC
/// to the millisecond (the journal stamps its own entries to the microsecond).
public struct StandardErrorLog: LogSink {
    public init() {}

    public func write(_ record: LogRecord) {
        let time = Date.now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
        let metadata = record.metadata.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        Self.write("\(time) \(record.level) \(record.label): \(record.message)\(metadata)\n")
    }

    /// One write(2), so that lines of two threads do not interleave.
    static func write(_ line: String) {
        var line = line
        line.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
    }
}
