import Foundation

/// A real dbus-daemon on a socket in a temporary directory, stopped when released.
/// By default every connection may own any name and send anything; `policy` replaces that.
public final class PrivateBus {
    public let address: String
    private let daemon: ChildProcess
    private let directory = TemporaryDirectory()

    public static let permissivePolicy = """
        <policy context="default">
          <allow user="*"/>
          <allow own="*"/>
          <allow send_destination="*" eavesdrop="true"/>
          <allow eavesdrop="true"/>
        </policy>
        """

    public init(policy: String = PrivateBus.permissivePolicy) throws {
        // Reachable by other users, so that tests can call as an unprivileged uid.
        chmod(directory.path, 0o755)
        let socket = directory.file("bus")
        let configuration = directory.file("bus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              \(policy)
            </busconfig>
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        daemon = try ChildProcess("/usr/bin/dbus-daemon", ["--config-file=\(configuration)", "--nofork", "--nopidfile"])
        address = "unix:path=\(socket)"
        // The socket file appears at bind(), before listen(): only a connection that succeeds says the bus is up.
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(socket) {
            guard Date() < deadline, daemon.isRunning else { throw POSIXError(.ETIMEDOUT) }
            usleep(10_000)
        }
    }

    private static func accepts(_ path: String) -> Bool {
        let descriptor = Foundation.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        return withUnixSocketAddress(path) { connect(descriptor, $0, $1) == 0 }
    }

    deinit {
        daemon.terminate()
        daemon.waitForExit(seconds: 5)
    }
}
