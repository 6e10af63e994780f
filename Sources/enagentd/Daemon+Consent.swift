import Dispatch
import ENAPI
import ENStore

/// Consent and pause: what makes the agent run or not.
extension Daemon {
    /// Enabling records consent (the first time, and after every withdrawal); disabling stops the radio at once.
    func setEnabled(_ on: Bool) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        guard try on != enabled else { return }
        try store.recordConsent(ConsentEvent(granted: on, recordedAt: clock.now))
        if on { try store.set(StoreSettings.pausedUntil, to: nil) }
        logger.notice(on ? "enabled: consent recorded" : "disabled: consent withdrawn", event: on ? .consentGiven : .consentWithdrawn)
        apply()
    }

    func pause(seconds: UInt64) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let applied = min(seconds, PauseArguments.longestSeconds)
        let until = clock.now + Int64(applied)
        try store.set(StoreSettings.pausedUntil, to: until)
        logger.info("paused for \(applied) s, until \(until) (unix time)"
                    + (applied < seconds ? "; \(seconds) s were asked for, more than the longest pause, \(PauseArguments.longestSeconds) s" : ""))
        apply()
    }

    /// Applies the status again after `seconds`: a pause ends by itself (its end is in the store,
    /// so a restart keeps it), and a store that could not be read may be readable again.
    func recheckStatus(after seconds: Double) {
        my.statusLook.recheckTimer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + max(0, seconds))
        timer.setEventHandler { [weak self] in
            self?.my.statusLook.recheckTimer = nil
            self?.apply()
        }
        timer.resume()
        my.statusLook.recheckTimer = timer
    }

    func resume() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        try store.set(StoreSettings.pausedUntil, to: nil)
        logger.info("resumed")
        apply()
    }
}
