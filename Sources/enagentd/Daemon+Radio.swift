import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENRadio

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
                if try upkeep.run() { self?.my.radioAgent?.clockStepped() }
            } catch {
                logger.error("upkeep failed: \(error)")
            }
        }
        timer.resume()
        my.upkeepTimer = timer
        if let bus { my.radioAgent = try startRadio(on: bus) }
    }

    func stopRunning() {
        my.upkeepTimer?.cancel()
        my.upkeepTimer = nil
        my.subscriptions.forEach { $0.cancel() }
        my.subscriptions = []
        my.managementWatch?.cancel()
        my.managementWatch = nil
        my.sleepInhibitor?.release()
        my.sleepInhibitor = nil
        my.radioAgent?.stop()
        my.radioAgent = nil
        my.radioState = RadioState()
    }

    /// Starts advertising and scanning through BlueZ.
    private func startRadio(on bus: DBusConnection) throws -> RadioAgent {
        let bluez = BlueZRadio(client: BlueZClient(connection: bus), management: KernelManagement(), adapter: radioSettings.adapter,
                               mayPowerOn: radioSettings.powerOn, scanMode: radioSettings.scan.mode, store: store, logger: logger)
        do {
            let adapter = BlueZRadio.identity(of: try bluez.adapter())
            my.adapterName = adapter.name
            my.adapterAddress = adapter.address
        } catch {
            // Only the TX power's source depends on it here; the agent meets the same problem at
            // once and its status says so.
            logger.info("no adapter to read the TX power from at the start: \(error)")
            if case .name(let name)? = radioSettings.adapter { my.adapterName = name } else { my.adapterName = "" }
            my.adapterAddress = nil
        }
        let metadata = Metadata(transmitPower: radioSettings.txPower(adapter: my.adapterName.isEmpty ? nil : my.adapterName, logger: logger))
        let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                               clock: clock, schedule: radioSettings.schedule, metadata: metadata, logger: logger) { [weak self, queue] state in
            queue.async { [weak self] in
                guard let self else { return }
                self.my.radioState = state
                if let adapter = bluez.adapterInUse {
                    self.my.adapterName = adapter.name
                    self.my.adapterAddress = adapter.address
                }
                self.apply()
            }
        }
        my.subscriptions = try bluez.follow(for: agent, logger: logger)
        my.managementWatch = bluez.watchManagement(for: agent, logger: logger)
        let sleep = SleepInhibitor(connection: bus, logger: logger)
        // Off the daemon's queue: a bus without logind may take its time to say so.
        DispatchQueue.global().async { sleep.inhibit() }
        my.subscriptions.append(try sleep.follow { [logger] sleeping in
            if sleeping {
                logger.info("the system is going to sleep")
                agent.prepareForSleep { sleep.release() }
            } else {
                // Not on the bus's dispatcher thread, which the call waits on.
                DispatchQueue.global().async { sleep.inhibit() }
                agent.radioReturned()
            }
        })
        my.sleepInhibitor = sleep
        agent.start()
        return agent
    }
}
