import ENBus
import ENSystemd
import Glibc
import Synchronization

/// systemd-logind's sleep, as a system service meets it: a "delay" inhibitor lock on sleep, so
/// that logind waits (InhibitDelayMaxSec, 5 s by default) until enagentd has taken its
/// advertisement off the air, and PrepareForSleep(true/false) before the machine sleeps and after
/// it wakes (org.freedesktop.login1(5)). Without logind (no systemd), nothing: the kernel then
/// puts the last advertisement back on the air at resume until the agent, awake again, replaces it.
final class SleepInhibitor: Sendable {
    static let service = "org.freedesktop.login1", path = "/org/freedesktop/login1", manager = "org.freedesktop.login1.Manager"

    private let connection: DBusConnection
    private let logger: Logger
    /// The lock's file descriptor while it is held: closing it releases the lock.
    private let lock = Mutex<Int32?>(nil)

    init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Takes the delay lock unless it is held; a system without logind gets a debug line.
    func inhibit() {
        guard lock.withLock({ $0 == nil }) else { return }
        do {
            let reply = try connection.call(destination: Self.service, path: Self.path, interface: Self.manager, member: "Inhibit",
                                            [.string("sleep"), .string("enagentd"), .string("take the Exposure Notification advertisement off the air"), .string("delay")],
                                            timeout: .seconds(5))
            guard case .unixFD(let descriptor)? = reply.first else {
                logger.warning("systemd-logind answered Inhibit without a file descriptor; the advertisement may outlast a suspend")
                return
            }
            let previous = lock.withLock { lock in defer { lock = descriptor }; return lock }
            if let previous { close(previous) }
        } catch {
            logger.debug("no sleep inhibitor lock (\(error.name)): without systemd-logind the kernel puts the last advertisement back on the air at resume until enagentd replaces it")
        }
    }

    /// Releases the lock: the machine may sleep now.
    func release() {
        if let descriptor = lock.withLock({ lock in defer { lock = nil }; return lock }) { close(descriptor) }
    }

    /// Calls `handler(true)` before the machine sleeps and `handler(false)` after it wakes.
    func follow(_ handler: @escaping @Sendable (_ sleeping: Bool) -> Void) throws(DBusError) -> SignalSubscription {
        try connection.subscribe(MatchRule(sender: Self.service, path: Self.path, interface: Self.manager, member: "PrepareForSleep")) { message in
            if let sleeping = message.arguments.first?.bool { handler(sleeping) }
        }
    }

    deinit { release() }
}
