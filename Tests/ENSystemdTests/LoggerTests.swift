import ENSystemd
import Glibc
import TestSupport
import Testing

struct LoggerTests {
    @Test func recordsCarryPriorityIdentifierEventAndMetadataAsJournalFields() {
        let record = LogRecord(level: .warning, message: "bluetoothd left the bus", label: "enagentd", event: .radioLost,
                               metadata: ["rolling-start": "2992032", "adapter": "hci0"])
        #expect(JournalLog.fields(of: record, identifier: "enagentd") == [
            "MESSAGE=bluetoothd left the bus", "PRIORITY=4", "SYSLOG_IDENTIFIER=enagentd", "MESSAGE_ID=bf6b70efc6f64283ae356de4d8b269dc",
            "ENAGENT_LOGGER=enagentd", "ENAGENT_ADAPTER=hci0", "ENAGENT_ROLLING_START=2992032",
        ])
        #expect(JournalLog.fields(of: LogRecord(level: .debug, message: "", label: "x"), identifier: "x")[1] == "PRIORITY=7")
        #expect(!JournalLog.fields(of: LogRecord(level: .critical, message: "", label: "x"), identifier: "x").contains { $0.hasPrefix("MESSAGE_ID=") },
                "only events carry a MESSAGE_ID")
    }

    /// The journal's ids: 128 bits in 32 lower-case hex digits, one per event.
    @Test func eachEventHasItsOwnMessageID() {
        let ids = LogEvent.all.map(\.messageID)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) && $0 == $0.lowercased() })
    }

    @Test func aLoggerWritesItsLevelAndAboveAndBuildsNothingBelow() {
        let capture = LogCapture()
        let logger = capture.logger(level: .notice)
        var built = 0
        func message(_ text: String) -> String { built += 1; return text }
        logger.debug(message("hidden"))
        logger.info(message("hidden"))
        logger.notice(message("shown"), event: .consentGiven)
        logger.critical(message("shown too"), metadata: ["what": "x"])
        #expect(capture.records == [LogRecord(level: .notice, message: "shown", label: "test", event: .consentGiven),
                                    LogRecord(level: .critical, message: "shown too", label: "test", metadata: ["what": "x"])])
        #expect(built == 2, "messages below the level are never built")
    }

    /// Under systemd, stderr is the journal when JOURNAL_STREAM names stderr's device and inode.
    @Test func standardErrorIsTheJournalOnlyWhenJournalStreamNamesIt() {
        var status = stat()
        #expect(fstat(2, &status) == 0)
        #expect(JournalLog.isJournal(2, stream: "\(status.st_dev):\(status.st_ino)"))
        #expect(!JournalLog.isJournal(2, stream: "\(status.st_dev):\(status.st_ino + 1)"))
        #expect(!JournalLog.isJournal(2, stream: "\(status.st_dev + 1):\(status.st_ino)"))
        #expect(!JournalLog.isJournal(2, stream: nil))
        #expect(!JournalLog.isJournal(-1, stream: "\(status.st_dev):\(status.st_ino)"), "no descriptor, no journal")
    }
}
