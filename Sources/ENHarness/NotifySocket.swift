import Foundation

/// A stand-in for systemd's notification socket: a datagram socket that a daemon started with
/// `NOTIFY_SOCKET` set to `path` reports to with sd_notify(3).
public final class NotifySocket {
    public let path: String
    private let descriptor: Int32

    public init(path: String) throws {
        self.path = path
        // Close-on-exec: the daemon must find it through NOTIFY_SOCKET only, as under systemd.
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let bound = withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// The next message, or nil if none arrives within `timeout` seconds.
    public func receive(timeout: Int) -> String? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Whether a message containing `text` arrives within `timeout` seconds (earlier ones are skipped).
    public func await(_ text: String, timeout: Int = 20) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout))
        while Date() < deadline {
            if let message = receive(timeout: max(1, Int(deadline.timeIntervalSinceNow))), message.contains(text) { return true }
        }
        return false
    }
}
