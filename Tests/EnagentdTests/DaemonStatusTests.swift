import ENAgent
import ENStore
@testable import enagentd
import ENSystemd
import TestSupport
import Testing

struct DaemonStatusTests {
    /// A database that cannot be read is said so, not taken for "no consent yet".
    @Test func anUnreadableStoreIsAStatusNotAGuess() throws {
        let directory = TemporaryDirectory()
        let store = try AgentStore(path: directory.file("enagent.db"))
        let settings = try RadioSettings(options: RadioOptions.parse(["--no-radio"]), file: AgentConfiguration())
        let daemon = Daemon(store: store, clock: SystemClock(), retention: .protocolDefault, synchronisation: nil, radioSettings: settings,
                            bus: nil, trustedKeys: [], logger: Logger(label: "test"))
        #expect(daemon.status == .consentRequired)
        try store.close()
        #expect(daemon.status == .storeUnreadable)
        #expect(!AgentStatus.storeUnreadable.runsAgent, "nothing runs without knowing the person's consent")
    }
}
