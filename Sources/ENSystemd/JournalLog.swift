import CENSystemd
import FoundationEssentials
import Glibc

/// Records to the systemd journal, structured (sd_journal_sendv): PRIORITY, SYSLOG_IDENTIFIER,
/// MESSAGE_ID for the events in `LogEvent`, the logger's label and the metadata as ENAGENT_
/// fields, so that `journalctl -u enagentd -p warning` and `journalctl MESSAGE_ID=…` work. A record
/// the journal refuses goes to stderr.
public struct JournalLog: LogSink {
    /// The program's name, as syslog identifies it.
    private let identifier = String(CommandLine.arguments.first?.split(separator: "/").last ?? "enagent")

    public init() {}

    /// Whether stderr is connected to the journal: systemd sets JOURNAL_STREAM to its device:inode.
    public static var standardErrorIsJournal: Bool { isJournal(2, stream: journalStream) }

    /// Whether stdout or stderr is connected to the journal, as under a unit's default output.
    public static var outputReachesJournal: Bool {
        let stream = journalStream
        return isJournal(1, stream: stream) || isJournal(2, stream: stream)
    }

    private static var journalStream: String? { ProcessInfo.processInfo.environment["JOURNAL_STREAM"] }

    /// Whether `descriptor` is the journal stream that a JOURNAL_STREAM of `stream` names. The value
    /// is an argument so that tests need not set the process's environment, which races with every
    /// thread that reads it: a test that set it could crash the test run in another thread.
    public static func isJournal(_ descriptor: Int32, stream: String?) -> Bool {
        guard let stream else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return stream == "\(status.st_dev):\(status.st_ino)"
    }

    public func write(_ record: LogRecord) {
        let sent = Self.fields(of: record, identifier: identifier).withIOVectors { vectors in
            sd_journal_sendv(vectors.baseAddress, Int32(vectors.count))
        }
        if sent < 0 { StandardErrorLog().write(record) }
    }

    /// The journal fields of one record: MESSAGE, PRIORITY (syslog's numbers), SYSLOG_IDENTIFIER,
    /// MESSAGE_ID for an event, the logger's label, and each metadata key in upper case with an
    /// ENAGENT_ prefix (the journal's field names are upper-case letters, digits and _).
    public static func fields(of record: LogRecord, identifier: String) -> [String] {
        let extra = record.metadata.sorted { $0.key < $1.key }.map { key, value in
            "ENAGENT_" + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined() + "=\(value)"
        }
        return ["MESSAGE=\(record.message)", "PRIORITY=\(record.level.rawValue)", "SYSLOG_IDENTIFIER=\(identifier)"]
            + (record.event.map { ["MESSAGE_ID=\($0.messageID)"] } ?? [])
            + ["ENAGENT_LOGGER=\(record.label)"] + extra
    }
}

private extension Array where Element == String {
    /// The strings as iovecs (without terminating NULs) for the duration of `body`.
    func withIOVectors<Result>(_ body: (UnsafeBufferPointer<iovec>) -> Result) -> Result {
        let copies = map { strdup($0)! }
        defer { copies.forEach { free($0) } }
        let vectors = zip(copies, self).map { iovec(iov_base: UnsafeMutableRawPointer($0), iov_len: $1.utf8.count) }
        return vectors.withUnsafeBufferPointer(body)
    }
}
