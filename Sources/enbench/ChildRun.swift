import Foundation

/// A program run to its end, timed, with its own peak memory (wait4's rusage is the child's
/// alone, however much the parent holds).
struct ChildRun {
    var seconds: Double
    var peakMemoryMB: Double
    var status: Int32
    var standardOutput: String

    /// Runs `executable` with `arguments` (and `environment` added to ours), its standard output
    /// captured and its standard error passed through (or dropped when `quiet`).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], quiet: Bool = false) throws -> ChildRun {
        let path = NSTemporaryDirectory() + "/enbench-output-\(getpid())"
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw BenchError("\(path): cannot be created") }
        defer { unlink(path) }
        let output = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? output.close() }
        return try runWith(executable, arguments, environment: environment, output: output, quiet: quiet)
    }

    private static func runWith(_ executable: String, _ arguments: [String], environment: [String: String], output: FileHandle,
                                quiet: Bool) throws -> ChildRun {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output.fileDescriptor, 1)
        if quiet { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let start = ContinuousClock.now
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw BenchError("\(executable): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0, usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
        }
        let elapsed = ContinuousClock.now - start
        try output.seek(toOffset: 0)
        let text = String(decoding: try output.readToEnd() ?? Data(), as: UTF8.self)
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ChildRun(seconds: elapsed.seconds, peakMemoryMB: Double(usage.ru_maxrss) / 1024, status: exitStatus, standardOutput: text)
    }
}

/// A memory figure of a running process from /proc/PID/status: VmRSS (resident now) or VmHWM
/// (its peak so far).
func memoryMB(_ field: String, of pid: pid_t) throws -> Double {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
          let kB = Double(line.split(separator: " ").dropFirst().first ?? "") else { throw BenchError("no \(field) for process \(pid)") }
    return kB / 1024
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
