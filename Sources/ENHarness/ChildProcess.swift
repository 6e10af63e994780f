import Foundation

/// A child process started with an empty signal mask and default signal actions, and with
/// /dev/null for stdin, stdout and (unless captured) stderr.
///
/// Foundation's Process passes on the spawning thread's signal mask, and a test runs on a
/// worker thread that blocks nearly every signal: a daemon started that way ignores SIGTERM.
/// A child that inherited the test runner's output pipe and outlived the test would keep
/// `swift test` waiting for the end of that output forever.
public final class ChildProcess {
    public let processIdentifier: pid_t
    private let errorOutput: FileHandle?
    private var status: Int32?

    /// Starts `executable`; with `captureStandardError`, its stderr is kept for `standardError()`.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                captureStandardError: Bool = false) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var pipe: Pipe?
        if captureStandardError {
            pipe = Pipe()
            posix_spawn_file_actions_adddup2(&actions, pipe!.fileHandleForWriting.fileDescriptor, 2)
        }
        // Nothing else of the test process: a parallel test's open file would otherwise show up
        // among the child's descriptors. glibc 2.34's closefrom action, which Swift's Glibc module
        // does not declare.
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environmentList = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + environmentList).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environmentList)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        processIdentifier = pid
        try pipe?.fileHandleForWriting.close()
        errorOutput = pipe?.fileHandleForReading
    }

    deinit {
        if isRunning {
            kill(processIdentifier, SIGKILL)
            waitForExit()
        }
    }

    public var isRunning: Bool { reap() == nil }

    public func terminate() { kill(processIdentifier, SIGTERM) }

    /// The exit status (or 128 + signal), waiting at most `seconds`; after that the child is
    /// killed and nil returned.
    @discardableResult
    public func waitForExit(seconds: Double = 20) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while reap() == nil && Date() < deadline { usleep(5_000) }
        if let status = reap() { return status }
        kill(processIdentifier, SIGKILL)
        while reap() == nil { usleep(5_000) }
        return nil
    }

    /// Everything the child wrote to stderr (it must have ended or closed stderr).
    public func standardError() -> String {
        String(decoding: errorOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    }

    private func reap() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(processIdentifier, &raw, WNOHANG) == processIdentifier else { return nil }
        let signal = raw & 0x7f
        status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        return status
    }
}
