import ENHarness
import Foundation

/// A server a test starts on a free loopback TCP port (python3's http.server, or one of the
/// test's own scripts), ready once it accepts connections, stopped with the test.
public final class LoopbackServer {
    public let port: UInt16
    /// `http://127.0.0.1:PORT/`
    public let url: String
    private let process: ChildProcess
    private var requests: String?

    /// Runs `executable` with the arguments `arguments(port)` gives; its stderr is kept.
    public init(_ executable: String, arguments: (UInt16) -> [String]) throws {
        port = try Self.freePort()
        url = "http://127.0.0.1:\(port)/"
        process = try ChildProcess(executable, arguments(port), captureStandardError: true)
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port) {
            guard Date() < deadline, process.isRunning else { throw POSIXError(.ETIMEDOUT) }
            usleep(20_000)
        }
    }

    deinit { _ = stop() }

    /// Stops the server (once) and returns what it wrote to stderr (http.server's log of requests).
    public func stop() -> String {
        if let requests { return requests }
        process.terminate()
        process.waitForExit()
        let log = process.standardError()
        requests = log
        return log
    }

    private static func freePort() throws -> UInt16 {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(socket, $0, length) == 0, getsockname(socket, $0, &length) == 0 else { throw POSIXError(.EADDRINUSE) }
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func accepts(_ port: UInt16) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")),
                    sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    }
}
