import Foundation
import ENHarness

/// Detection through the API: enagentd without a radio on a private dbus-daemon (ENHarness's,
/// as the service tests use it), its store a copy of one of the benchmark's databases, and
/// `enctl detect files` handing it an export.
struct DaemonDetection {
    let enagentd: String
    let enctl: String
    let publicKey: String
    let database: String
    let export: String
    let keys: Int
    let label: String
    let directory: String

    func run() throws -> WholeRun {
        let bus = try PrivateBus()
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]

        let trusted = directory + "/trusted-keys"
        try? FileManager.default.removeItem(atPath: trusted)
        try FileManager.default.createDirectory(atPath: trusted, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: publicKey, toPath: trusted + "/bench.pem")
        // A copy of the database, so that the daemon's records (the file processed, the windows)
        // do not change the data for the next run.
        let state = directory + "/daemon-state"
        try? FileManager.default.removeItem(atPath: state)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: database + suffix) {
            try FileManager.default.copyItem(atPath: database + suffix, toPath: state + "/enagent.db" + suffix)
        }
        try "radio = no\nrequire-synchronised-clock = no\nstate-directory = \(state)\ntrusted-keys-directory = \(trusted)\n"
            .write(toFile: directory + "/enagent.conf", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess(enagentd, ["--config", directory + "/enagent.conf"],
                                      environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        defer {
            daemon.terminate()
            daemon.waitForExit()
        }
        // Ready when it answers on the bus ("not running" until then, not worth printing).
        let deadline = Date().addingTimeInterval(60)
        while try ChildRun.run(enctl, ["enable"], environment: environment, quiet: true).status != 0 {
            guard Date() < deadline, daemon.isRunning else { throw BenchError("enagentd did not come up on the private bus") }
            usleep(100_000)
        }
        let run = try ChildRun.run(enctl, ["detect", "files", "--json", export], environment: environment)
        return WholeRun(label: label, keys: keys, run: run,
                        daemonPeakMemoryMB: try memoryMB("VmHWM", of: daemon.processIdentifier))
    }
}
