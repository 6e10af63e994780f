import CENSystemd
import Dispatch

/// systemd's watchdog (WatchdogSec=): WATCHDOG=1 at half the interval, but only while `isHealthy`
/// answers, so a wedged radio queue makes systemd restart the service.
public enum Watchdog {
    /// Starts pinging when the unit has a watchdog; returns the timer to keep, or nil.
    public static func start(on queue: DispatchQueue, isHealthy: @escaping () -> Bool) -> (any DispatchSourceTimer)? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        let period = DispatchTimeInterval.microseconds(Int(min(microseconds / 2, UInt64(Int32.max))))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: period)
        timer.setEventHandler {
            if isHealthy() { Systemd.notify("WATCHDOG=1") }
        }
        timer.resume()
        return timer
    }
}
