import ENAgent
import ENCore
import ENStore
@testable import enagentd
import ENSystemd
import Synchronization
import TestSupport
import Testing

/// What happened, in order, shared by the radio and what the run releases.
private final class Log: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A radio that writes its calls into the log.
private final class LoggingRadio: Radio {
    let log: Log
    init(log: Log) { self.log = log }
    func advertise(_ serviceData: (Int8?) throws -> [UInt8]) throws {
        _ = try serviceData(nil)
        log.append("advertise")
    }
    func stopAdvertising() { log.append("stopAdvertising") }
    func startScanning() { log.append("startScanning") }
    func stopScanning() { log.append("stopScanning") }
    let longestScanSeconds: Double? = nil
    let activity = RadioActivity()
}

struct RadioRunTests {
    /// make test's Debian 12 lab of 2026-11-29: enctl pause cancelled the kernel's management watch
    /// while agent b's radio waited on it for a Discovering event; the radio judged bluetoothd
    /// stalled, and bluetoothd's discovery, left running, later went out from the public address.
    /// The run stops the agent (which waits for the radio's call in progress) before it releases
    /// what the radio uses.
    @Test func stopsTheAgentBeforeReleasingWhatItsRadioUses() throws {
        let directory = TemporaryDirectory()
        let store = try AgentStore(path: directory.file("enagent.db"))
        let clock = SimulatedClock(1_700_006_400 + 120)
        let log = Log()
        let agent = RadioAgent(radio: LoggingRadio(log: log), keys: try KeySchedule(store: store, clock: clock), store: store, clock: clock,
                               schedule: .standard, metadata: Metadata(transmitPower: -4), logger: Logger(label: "test"))
        agent.start()
        let run = RadioRun(agent: agent) { log.append("released") }
        run.stop()
        #expect(log.all == ["advertise", "startScanning", "stopAdvertising", "stopScanning", "released"])
    }
}
