import CENSystemd
import Foundation
import Logging

/// Writes log records to the systemd journal with their priority and metadata as fields
/// (`ENAGENT_INTERVAL=…`), so `journalctl -u enagentd -p warning` works. Used when stderr is
/// the journal (JOURNAL_STREAM); a record the journal refuses goes to stderr.
struct JournalLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]
    private let label: String

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Whether stderr is connected to the journal: systemd sets JOURNAL_STREAM to its device:inode.
    static var standardErrorIsJournal: Bool {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return stream == "\(status.st_dev):\(status.st_ino)"
    }

    func log(event: LogEvent) {
        let fields = Self.fields(level: event.level, message: "\(event.message)", label: label,
                                 metadata: metadata.merging(event.metadata ?? [:]) { $1 })
        let sent = fields.withIOVectors { vectors in sd_journal_sendv(vectors.baseAddress, Int32(vectors.count)) }
        if sent < 0 { FileHandle.standardError.write(Data("\(event.level) \(label): \(event.message)\n".utf8)) }
    }

    /// The journal fields of one record: MESSAGE, PRIORITY (syslog numbers), SYSLOG_IDENTIFIER,
    /// the logger's label, and each metadata key in upper case with an ENAGENT_ prefix.
    static func fields(level: Logger.Level, message: String, label: String, metadata: Logger.Metadata) -> [String] {
        let priority: Int
        switch level {
        case .trace, .debug: priority = 7
        case .info: priority = 6
        case .notice: priority = 5
        case .warning: priority = 4
        case .error: priority = 3
        case .critical: priority = 2
        }
        let extra = metadata.sorted { $0.key < $1.key }.map { key, value in
            "ENAGENT_" + key.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined() + "=\(value)"
        }
        return ["MESSAGE=\(message)", "PRIORITY=\(priority)", "SYSLOG_IDENTIFIER=enagentd", "ENAGENT_LOGGER=\(label)"] + extra
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
