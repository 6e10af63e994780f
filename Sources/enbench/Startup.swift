import Foundation
import TestSupport

/// enagentd from exec to READY=1 (sd_notify on a socket of ours, as systemd's Type=notify
/// sees it), with a fresh database and no radio, and its resident memory idle after that.
struct Startup {
    let enagentd: String
    let directory: String

    /// The fastest and the median of `runs` starts, in milliseconds, and the last run's idle RSS in MB.
    func measure(runs: Int = 7) throws -> (fastest: Double, median: Double, idleRSSMB: Double) {
        let bus = try PrivateBus()
        var times = [Double](), rss = 0.0
        for run in 0..<runs {
            let state = directory + "/startup-state"
            try? FileManager.default.removeItem(atPath: state)
            let socketPath = directory + "/notify-\(run)"
            let notify = try NotifySocket(path: socketPath)
            let started = ContinuousClock.now
            let daemon = try ChildProcess(enagentd, ["--no-radio", "--no-require-synchronised-clock", "--state-dir", state],
                                          environment: ProcessInfo.processInfo.environment.merging(
                                              ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NOTIFY_SOCKET": socketPath]) { $1 })
            defer {
                daemon.terminate()
                _ = daemon.waitForExit()
            }
            guard notify.waitFor("READY=1", seconds: 20) else { throw BenchError("enagentd sent no READY=1 within 20 s: \(daemon.standardError())") }
            times.append((ContinuousClock.now - started).seconds * 1_000)
            if run == runs - 1 {
                sleep(2)
                rss = try Self.residentMB(of: daemon.processIdentifier)
            }
        }
        times.sort()
        return (times[0], times[times.count / 2], rss)
    }

    static func residentMB(of pid: pid_t) throws -> Double {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kB = Double(line.split(separator: " ").dropFirst().first ?? "") else { throw BenchError("no VmRSS for \(pid)") }
        return kB / 1024
    }
}

/// A datagram socket bound where NOTIFY_SOCKET points, as systemd's.
private final class NotifySocket {
    private let descriptor: Int32
    private let path: String

    init(path: String) throws {
        self.path = path
        unlink(path)
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            bytes.copyBytes(from: path.utf8.prefix(bytes.count - 1))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw BenchError("cannot bind \(path): \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Whether a datagram holding `line` arrives within `seconds`.
    func waitFor(_ line: String, seconds: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0, String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").contains(Substring(line)) { return true }
        }
        return false
    }
}
