import Foundation

/// Detection through the API: enagentd without a radio on a private dbus-daemon, its store the
/// benchmark's database, and `enctl detect files` handing it the 1M-key export.
struct DaemonDetection {
    let enagentd: String
    let enctl: String
    let data: DetectionData
    let directory: String

    init(enagentd: String, enctl: String, data: DetectionData, in directory: String) {
        (self.enagentd, self.enctl, self.data, self.directory) = (enagentd, enctl, data, directory)
    }

    func run() throws -> WholeRun {
        let socket = directory + "/bus"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/></policy>
            </busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        let bus = try Self.start("/usr/bin/dbus-daemon", ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"])
        defer { Self.stop(bus) }
        try Self.waitUntilAccepting(socket)
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(socket)"]

        let trusted = directory + "/trusted-keys"
        try? FileManager.default.removeItem(atPath: trusted)
        try FileManager.default.createDirectory(atPath: trusted, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: data.publicKey, toPath: trusted + "/bench.pem")
        // A copy of the database, so that the daemon's records (the file processed, the windows)
        // do not change the data for the next run.
        let state = directory + "/daemon-state"
        try? FileManager.default.removeItem(atPath: state)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: data.database + suffix) {
            try FileManager.default.copyItem(atPath: data.database + suffix, toPath: state + "/enagent.db" + suffix)
        }
        try "radio = no\nrequire-synchronised-clock = no\nstate-directory = \(state)\ntrusted-keys-directory = \(trusted)\n"
            .write(toFile: directory + "/enagent.conf", atomically: true, encoding: .utf8)
        let daemon = try Self.start(enagentd, ["--config", directory + "/enagent.conf"], environment: environment)
        defer { Self.stop(daemon) }
        // Ready when it answers on the bus.
        let deadline = Date().addingTimeInterval(60)
        while try ChildRun.run(enctl, ["enable"], environment: environment).status != 0 {
            guard Date() < deadline, daemon.isRunning else { throw BenchError("enagentd did not come up on the private bus") }
            usleep(100_000)
        }
        let run = try ChildRun.run(enctl, ["detect", "files", "--json", data.largeExport], environment: environment)
        return WholeRun(label: "  enctl → enagentd, the same through D-Bus", keys: data.largeKeyCount, run: run,
                        daemonPeakMemoryMB: Self.peakMemoryMB(of: daemon.processIdentifier))
    }

    private static func start(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        try process.run()
        return process
    }

    /// The socket file appears at bind(), before listen(): only a connection that succeeds says
    /// the bus is up.
    private static func waitUntilAccepting(_ path: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8.prefix($0.count - 1)) }
        for _ in 0..<500 {
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if connected == 0 { return }
            usleep(20_000)
        }
        throw BenchError("dbus-daemon did not listen on \(path)")
    }

    private static func stop(_ process: Process) {
        process.terminate()
        process.waitUntilExit()
    }

    /// VmHWM: the process's peak resident memory so far.
    private static func peakMemoryMB(of pid: Int32) -> Double? {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return line.split(separator: " ").dropFirst().first.flatMap { Double($0) }.map { $0 / 1024 }
    }
}
