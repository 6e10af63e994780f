import ENAgent
import ENCore

/// The radio while the daemon runs it: the agent, and what ties it to the system (bluetoothd's
/// signals, the kernel's management watch, systemd-logind's delay lock on sleep); `stop()`
/// releases every one of them and stops the agent, which writes the sightings still pending.
final class RadioRun {
    let agent: RadioAgent
    /// The adapter as the run found it at its start.
    let adapter: AdapterShown
    private let release: () -> Void

    init(agent: RadioAgent, adapter: AdapterShown, release: @escaping () -> Void) {
        self.agent = agent
        self.adapter = adapter
        self.release = release
    }

    func stop() {
        release()
        agent.stop()
    }
}

/// The adapter as the status and the properties show it: "" when none is known, with its address
/// once BlueZ has given it.
struct AdapterShown: Equatable, Sendable {
    var name = ""
    var address: BluetoothAddress?
}

/// How the daemon starts a radio run, made where enagentd is wired (BlueZ on the system bus:
/// `RadioStarter.bluez`), so that the daemon knows no radio of its own.
struct RadioStarter: Sendable {
    /// The adapter the configuration names, for the status while the radio has found none.
    let configuredAdapter: String?
    /// Starts the agent and its radio; `onChange` hears, on the radio's queue, each state the agent
    /// derives, with the adapter then in use (nil when none is known).
    let start: @Sendable (_ onChange: @escaping @Sendable (RadioState, AdapterShown?) -> Void) throws -> RadioRun
}
