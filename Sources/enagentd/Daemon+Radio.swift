import Dispatch
import ENAgent
import ENCore

/// The running parts: the key schedule's upkeep and the radio, while the status allows.
extension Daemon {
    func startRunning() throws {
        // One upkeep for the daemon's life: the clock steps it has seen outlast a pause.
        let upkeep = my.upkeep ?? Upkeep(store: store, clock: clock, retention: retention, synchronisation: synchronisation, logger: logger)
        my.upkeep = upkeep
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler { [weak self] in self?.runUpkeep() }
        timer.resume()
        my.running = Running(upkeepTimer: timer, radio: try radioStarter.map(startRadio))
    }

    /// The upkeep's run while the agent runs; a step of the clock or a sleep it finds brings the
    /// radio a fresh identifier, or the wait for a later interval.
    func runUpkeep() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard my.running != nil, let upkeep = my.upkeep else { return }
        do {
            if try upkeep.run() { radioAgent?.clockStepped() }
        } catch {
            logger.error("upkeep failed: \(error)")
        }
    }

    /// The wall clock was set (`ClockChanges`): the upkeep looks at it at once, and the status
    /// too (a pause may have ended by the new time).
    func clockWasSet() {
        dispatchPrecondition(condition: .onQueue(queue))
        runUpkeep()
        apply()
    }

    func stopRunning() {
        my.running?.stop()
        my.running = nil
        my.radio = RadioState()
    }

    /// Starts the radio run; the agent's changes come to the daemon's queue.
    private func startRadio(_ starter: RadioStarter) throws -> RadioRun {
        let run = try starter.start { [weak self, queue] state in
            queue.async { [weak self] in
                guard let self else { return }
                self.my.radio = state
                self.apply()
            }
        }
        return run
    }
}
