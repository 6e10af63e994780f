import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENRadio
import ENStore
import ENSystemd

extension RadioStarter {
    /// Advertising and scanning through BlueZ on `bus`, as `settings` say.
    static func bluez(bus: DBusConnection, settings: RadioSettings, store: AgentStore, clock: any AgentClock, retention: RetentionPolicy,
                      logger: Logger) -> RadioStarter {
        // One queue for the agent and its radio, in every run: the agent calls the radio there, the
        // kernel's events and bluetoothd's signals are handled there.
        let radioQueue = DispatchQueue(label: "enagent.radio")
        // What each run's radio learns of bluetoothd's run, for the next (a pause and a resume build
        // a new one) and for the next process.
        let bluetoothd = BluetoothdCondition(queue: radioQueue, store: store)
        return RadioStarter(configuredAdapter: settings.adapter?.description) { onChange in
            let bluez = BlueZRadio(client: BlueZClient(connection: bus), management: KernelManagement(), adapter: settings.adapter,
                                   mayPowerOn: settings.powerOn, scanMode: settings.scan.mode, store: store, logger: logger, queue: radioQueue,
                                   bluetoothd: bluetoothd)
            // The controller's own power replaces it where the radio learns it (`Radio.advertise`).
            let metadata = Metadata(transmitPower: settings.txPower)
            let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                                   clock: clock, schedule: settings.schedule, metadata: metadata, logger: logger, queue: radioQueue, onChange: onChange)
            let followed = try bluez.follow(for: agent, logger: logger)
            let managementWatch = radioQueue.sync { bluez.watchManagement(for: agent, logger: logger) }
            let sleep = SleepInhibitor(connection: bus, logger: logger)
            // Off the daemon's queue: a bus without logind may take its time to say so.
            DispatchQueue.global().async { sleep.inhibit() }
            let subscriptions = followed + [try sleep.follow { [logger] sleeping in
                if sleeping {
                    logger.info("the system is going to sleep")
                    agent.prepareForSleep { sleep.release() }
                } else {
                    // Not on the bus's dispatcher thread, which the call waits on.
                    DispatchQueue.global().async { sleep.inhibit() }
                    agent.radioReturned()
                }
            }]
            agent.start()
            return RadioRun(agent: agent) {
                subscriptions.forEach { $0.cancel() }
                if let watchOn = radioQueue.sync(execute: { bluez.endRun() }) {
                    radioQueue.asyncAfter(deadline: .now() + watchOn) { managementWatch?.cancel() }
                } else {
                    managementWatch?.cancel()
                }
                sleep.release()
            }
        }
    }
}
