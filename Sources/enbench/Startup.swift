import ENHarness
import Foundation

/// enagentd from exec to READY=1 (sd_notify on a socket of ours, as systemd's Type=notify
/// sees it), with a fresh database and no radio, and its resident memory idle after that.
struct Startup {
    let enagentd: String
    let directory: String

    /// The fastest and the median of `runs` starts, and the last run's idle RSS.
    func measure(runs: Int) throws -> StartupFigures {
        let bus = try PrivateBus()
        var times = [Double](), idleResidentMB = 0.0
        for run in 0..<runs {
            let state = directory + "/startup-state"
            try? FileManager.default.removeItem(atPath: state)
            let notify = try NotifySocket(path: directory + "/notify-\(run)")
            let started = ContinuousClock.now
            let daemon = try ChildProcess(enagentd, ["--no-radio", "--no-require-synchronised-clock", "--state-dir", state],
                                          environment: ProcessInfo.processInfo.environment.merging(
                                              ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NOTIFY_SOCKET": notify.path]) { $1 })
            defer {
                daemon.terminate()
                daemon.waitForExit()
            }
            guard notify.await("READY=1") else { throw BenchError("enagentd sent no READY=1 within 20 s") }
            times.append((ContinuousClock.now - started).seconds * 1_000)
            if run == runs - 1 {
                sleep(2)
                idleResidentMB = try memoryMB("VmRSS", of: daemon.processIdentifier)
            }
        }
        times.sort()
        return StartupFigures(fastestMilliseconds: times[0], medianMilliseconds: times[times.count / 2], idleResidentMB: idleResidentMB)
    }
}
