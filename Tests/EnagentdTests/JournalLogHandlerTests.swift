@testable import enagentd
import Testing

struct JournalLogHandlerTests {
    @Test func recordsCarryPriorityIdentifierAndMetadataAsJournalFields() {
        let fields = JournalLogHandler.fields(level: .warning, message: "bluetoothd left the bus", label: "enagentd",
                                              metadata: ["rolling-start": "2992032", "adapter": "hci0"])
        #expect(fields == ["MESSAGE=bluetoothd left the bus", "PRIORITY=4", "SYSLOG_IDENTIFIER=enagentd", "ENAGENT_LOGGER=enagentd",
                           "ENAGENT_ADAPTER=hci0", "ENAGENT_ROLLING_START=2992032"])
        #expect(JournalLogHandler.fields(level: .debug, message: "", label: "x", metadata: [:])[1] == "PRIORITY=7")
        #expect(JournalLogHandler.fields(level: .critical, message: "", label: "x", metadata: [:])[1] == "PRIORITY=2")
    }
}
