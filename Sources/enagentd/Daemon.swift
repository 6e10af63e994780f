import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENStore
import Foundation
import Logging

/// The daemon's running parts, started once the clock can be trusted: the day's key and
/// retention (Upkeep), and the radio. Touched only on the main queue.
final class Daemon: @unchecked Sendable {
    private let store: AgentStore
    private let clock: any AgentClock
    private let retention: RetentionPolicy
    private let radioSettings: RadioSettings
    private let bus: DBusConnection?
    private let logger: Logger
    private var upkeepTimer: (any DispatchSourceTimer)?
    private var radioAgent: RadioAgent?
    private var subscriptions = [SignalSubscription]()

    /// `bus` is the system bus when the radio is in use.
    init(store: AgentStore, clock: any AgentClock, retention: RetentionPolicy, radioSettings: RadioSettings, bus: DBusConnection?,
         logger: Logger) {
        self.store = store
        self.clock = clock
        self.retention = retention
        self.radioSettings = radioSettings
        self.bus = bus
        self.logger = logger
    }

    func start() throws {
        let upkeep = try Upkeep(store: store, clock: clock, retention: retention, logger: logger)
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler { [logger] in
            do { try upkeep.run() } catch { logger.error("upkeep failed: \(error)") }
        }
        timer.resume()
        upkeepTimer = timer
        if let bus { radioAgent = try startRadio(on: bus) }
        Systemd.notify("STATUS=" + (radioAgent == nil ? "Keeping keys; radio off" : "Advertising and scanning"))
    }

    /// Stops the radio (writing pending sightings) and closes the database.
    func stop() {
        upkeepTimer?.cancel()
        radioAgent?.stop()
        do { try store.close() } catch { logger.error("\(error)") }
    }

    /// Whether the radio's queue still answers (for the watchdog).
    var isHealthy: Bool { radioAgent?.isResponsive ?? true }

    /// Starts advertising and scanning through BlueZ; follows bluetoothd and the adapter so that
    /// the radio comes back by itself after either goes away.
    private func startRadio(on bus: DBusConnection) throws -> RadioAgent {
        let client = BlueZClient(connection: bus)
        let bluez = BlueZRadio(client: client, adapterName: radioSettings.adapter, mayPowerOn: radioSettings.powerOn)
        let metadata = Metadata(transmitPower: radioSettings.txPower(adapter: try? bluez.adapter().name, logger: logger))
        let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                               clock: clock, schedule: radioSettings.schedule, metadata: metadata, logger: logger)
        subscriptions = try client.followDevices { report in
            guard let data = report.serviceData, report.adapter == bluez.adapterInUse else { return }
            agent.report(RadioReport(serviceData: data, rssi: report.rssi, adapter: report.adapter))
        } + [try client.followService { [logger] present in
            if present {
                agent.radioReturned()
            } else {
                logger.warning("bluetoothd left the bus; waiting for it to return")
                agent.radioLost()
            }
        }] + client.followAdapters { agent.radioReturned() }
        agent.start()
        return agent
    }
}
