import ENAgent
import ENCore

/// The radio while the daemon runs it: the agent, and what ties it to the system (bluetoothd's
/// signals, the kernel's management watch, systemd-logind's delay lock on sleep); `stop()`
/// stops the agent, which writes the sightings still pending, and then releases every one of them.
final class RadioRun {
    let agent: RadioAgent
    private let release: () -> Void

    init(agent: RadioAgent, release: @escaping () -> Void) {
        self.agent = agent
        self.release = release
    }

    /// The agent first: its stop waits for the radio's call in progress, which may rely on what
    /// is released (a scan waiting on the management watch for the kernel's Discovering event
    /// judged bluetoothd stalled when the watch went under it).
    func stop() {
        agent.stop()
        release()
    }
}

/// How the daemon starts a radio run, made where enagentd is wired (BlueZ on the system bus:
/// `RadioStarter.bluez`), so that the daemon knows no radio of its own.
struct RadioStarter: Sendable {
    /// The adapter the configuration names, for the status while the radio has found none.
    let configuredAdapter: String?
    /// Starts the agent and its radio; `onChange` hears, on the radio's queue, each state the agent
    /// derives (with the adapter then in use, nil when none is known), the first before `start`
    /// returns.
    let start: @Sendable (_ onChange: @escaping @Sendable (RadioState) -> Void) throws -> RadioRun
}
