import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENRadio

/// The radio while the daemon runs it: the agent, and what ties it to BlueZ, the kernel and
/// systemd-logind (the subscriptions, the management watch, the delay lock on sleep); `stop()`
/// releases every one of them and stops the agent, which writes the sightings still pending.
final class RadioRun {
    let agent: RadioAgent
    private let subscriptions: [SignalSubscription]
    private let managementWatch: (any ManagementWatch)?
    private let sleepInhibitor: SleepInhibitor

    init(agent: RadioAgent, subscriptions: [SignalSubscription], managementWatch: (any ManagementWatch)?, sleepInhibitor: SleepInhibitor) {
        self.agent = agent
        self.subscriptions = subscriptions
        self.managementWatch = managementWatch
        self.sleepInhibitor = sleepInhibitor
    }

    func stop() {
        subscriptions.forEach { $0.cancel() }
        managementWatch?.cancel()
        sleepInhibitor.release()
        agent.stop()
    }
}

/// The running parts: the key schedule's upkeep and the radio, while the status allows.
extension Daemon {
    func startRunning() throws {
        // One upkeep for the daemon's life: the clock steps it has seen outlast a pause.
        let upkeep = my.upkeep ?? Upkeep(store: store, clock: clock, retention: retention, synchronisation: synchronisation, logger: logger)
        my.upkeep = upkeep
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler { [weak self, logger] in
            do {
                if try upkeep.run() { self?.radioAgent?.clockStepped() }
            } catch {
                logger.error("upkeep failed: \(error)")
            }
        }
        timer.resume()
        my.running = Running(upkeepTimer: timer, radio: try bus.map(startRadio(on:)))
    }

    func stopRunning() {
        my.running?.stop()
        my.running = nil
        my.radio.state = RadioState()
    }

    /// Starts advertising and scanning through BlueZ.
    private func startRadio(on bus: DBusConnection) throws -> RadioRun {
        // One queue for the agent and its radio: the agent calls the radio there, the kernel's
        // events and bluetoothd's signals are handled there.
        let radioQueue = DispatchQueue(label: "enagent.radio")
        let bluez = BlueZRadio(client: BlueZClient(connection: bus), management: KernelManagement(), adapter: radioSettings.adapter,
                               mayPowerOn: radioSettings.powerOn, scanMode: radioSettings.scan.mode, store: store, logger: logger, queue: radioQueue)
        do {
            let adapter = BlueZRadio.identity(of: try radioQueue.sync { try bluez.adapter() })
            my.radio.adapterName = adapter.name
            my.radio.adapterAddress = adapter.address
        } catch {
            // Only the TX power's source depends on it here; the agent meets the same problem at
            // once and its status says so.
            logger.info("no adapter to read the TX power from at the start: \(error)")
            if case .name(let name)? = radioSettings.adapter { my.radio.adapterName = name } else { my.radio.adapterName = "" }
            my.radio.adapterAddress = nil
        }
        let adapterName = my.radio.adapterName
        let metadata = Metadata(transmitPower: radioSettings.txPower(adapter: adapterName.isEmpty ? nil : adapterName, logger: logger))
        let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                               clock: clock, schedule: radioSettings.schedule, metadata: metadata, logger: logger, queue: radioQueue) { [weak self, queue] state in
            // Called on the radio's queue, where the radio's adapter is read.
            let adapterInUse = bluez.adapterInUse
            queue.async { [weak self] in
                guard let self else { return }
                self.my.radio.state = state
                if let adapter = adapterInUse {
                    self.my.radio.adapterName = adapter.name
                    self.my.radio.adapterAddress = adapter.address
                }
                self.apply()
            }
        }
        var subscriptions = try bluez.follow(for: agent, logger: logger)
        let managementWatch = radioQueue.sync { bluez.watchManagement(for: agent, logger: logger) }
        let sleep = SleepInhibitor(connection: bus, logger: logger)
        // Off the daemon's queue: a bus without logind may take its time to say so.
        DispatchQueue.global().async { sleep.inhibit() }
        subscriptions.append(try sleep.follow { [logger] sleeping in
            if sleeping {
                logger.info("the system is going to sleep")
                agent.prepareForSleep { sleep.release() }
            } else {
                // Not on the bus's dispatcher thread, which the call waits on.
                DispatchQueue.global().async { sleep.inhibit() }
                agent.radioReturned()
            }
        })
        agent.start()
        return RadioRun(agent: agent, subscriptions: subscriptions, managementWatch: managementWatch, sleepInhibitor: sleep)
    }
}
