import ENSystemd
import Synchronization

/// A log sink that keeps what it is given, for tests that check what was logged.
public final class LogCapture: LogSink {
    private let kept = Mutex<[LogRecord]>([])

    public init() {}

    public func write(_ record: LogRecord) { kept.withLock { $0.append(record) } }

    public var records: [LogRecord] { kept.withLock { $0 } }

    /// A logger at `level` that writes here.
    public func logger(level: LogLevel = .debug) -> Logger { Logger(label: "test", level: level, sink: self) }
}
