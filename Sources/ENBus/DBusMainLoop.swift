import CENDBus
import FoundationEssentials
import Glibc
import Synchronization

/// The dispatcher thread's loop: polls libdbus's watches and a wake-up pipe, runs its timeouts,
/// and dispatches queued messages.
///
/// Because the loop does its own polling, libdbus's I/O path is free while it waits, so a
/// blocking call from another thread reads its reply at once. libdbus wakes the loop when
/// another thread queues outgoing data or reads incoming messages.
/// Sendable by hand: its mutable members are under `lock`.
final class DBusMainLoop: @unchecked Sendable {
    private let lock = Mutex(())
    private var watches = [OpaquePointer]()
    /// Enabled timeouts and when each next fires.
    private var timeouts = [OpaquePointer: ContinuousClock.Instant]()
    private var stopping = false
    /// The connection's owner is gone: the dispatcher thread releases the connection.
    private var released = false
    /// Work for the dispatcher thread (sending), and whether that thread has ended.
    private var jobs = [() -> Void]()
    private var ended = false
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("cannot create the D-Bus wake-up pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFL, O_NONBLOCK) }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Hands libdbus the functions that keep this loop informed about `connection`.
    func attach(to connection: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, context in
            DBusMainLoop.loop(context).update { $0.watches.append(watch!) }
            return 1
        }, { watch, context in
            DBusMainLoop.loop(context).update { $0.watches.removeAll { $0 == watch } }
        }, { _, context in
            DBusMainLoop.loop(context).wake()
        }, context, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, context in
            DBusMainLoop.loop(context).update { $0.arm(timeout!) }
            return 1
        }, { timeout, context in
            DBusMainLoop.loop(context).update { $0.timeouts[timeout!] = nil }
        }, { timeout, context in
            DBusMainLoop.loop(context).update { $0.arm(timeout!) }
        }, context, nil)
        dbus_connection_set_wakeup_main_function(connection, { context in DBusMainLoop.loop(context).wake() }, context, nil)
        dbus_connection_set_dispatch_status_function(connection, { _, status, context in
            if status == DBUS_DISPATCH_DATA_REMAINS { DBusMainLoop.loop(context).wake() }
        }, context, nil)
    }

    /// Runs until `stop()` or until the connection is lost.
    enum Ending { case stopped, released }

    /// Runs until `stop` or `release` is called or the connection is lost.
    func run(_ connection: OpaquePointer) -> Ending {
        defer { finish() }
        while true {
            takeJobs().forEach { $0() }
            while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
            let (watched, waitMilliseconds, stop) = prepare()
            if stop || dbus_connection_get_is_connected(connection) == 0 { return lock.withLock { _ in released } ? .released : .stopped }
            var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)] + watched.map { watch in
                let flags = dbus_watch_get_flags(watch)
                let events = (flags & DBUS_WATCH_READABLE.rawValue != 0 ? POLLIN : 0) | (flags & DBUS_WATCH_WRITABLE.rawValue != 0 ? POLLOUT : 0)
                return pollfd(fd: dbus_watch_get_unix_fd(watch), events: Int16(events), revents: 0)
            }
            _ = poll(&descriptors, nfds_t(descriptors.count), waitMilliseconds)
            var byte: UInt8 = 0
            while read(wakeRead, &byte, 1) > 0 {}
            for (watch, descriptor) in zip(watched, descriptors.dropFirst()) where descriptor.revents != 0 {
                // An earlier watch's handling may have removed this one.
                guard lock.withLock({ _ in watches.contains(watch) }) else { continue }
                let revents = Int32(descriptor.revents)
                var flags: UInt32 = 0
                if revents & Int32(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
                if revents & Int32(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
                if revents & Int32(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
                if revents & Int32(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
                dbus_watch_handle(watch, flags)
            }
            for timeout in dueTimeouts() { dbus_timeout_handle(timeout) }
        }
    }

    /// Runs `job` on the dispatcher thread, or at once once that thread has ended. All sending
    /// goes this way: libdbus frees a connection's watches when a send on another thread finds
    /// the connection lost, while this thread may be about to handle one of them.
    func perform(_ job: @escaping () -> Void) {
        let now = lock.withLock { _ -> Bool in
            if ended { return true }
            jobs.append(job)
            return false
        }
        if now { job() } else { wake() }
    }

    private func takeJobs() -> [() -> Void] {
        lock.withLock { _ in
            defer { jobs = [] }
            return jobs
        }
    }

    /// From now on `perform` runs its job at once; what was queued before runs here.
    private func finish() {
        lock.withLock { _ in ended = true }
        takeJobs().forEach { $0() }
    }

    /// Makes `run` return soon.
    func stop() {
        update { $0.stopping = true }
    }

    /// Makes `run` return soon, saying that the connection is the dispatcher thread's to release.
    func release() {
        update { loop in
            loop.stopping = true
            loop.released = true
        }
    }

    /// The enabled watches, how long to wait for them (until the next timeout), and whether to stop.
    private func prepare() -> ([OpaquePointer], Int32, Bool) {
        lock.withLock { _ in
            let enabled = watches.filter { dbus_watch_get_enabled($0) != 0 }
            let now = ContinuousClock.now
            let wait = timeouts.values.min().map { deadline -> Int32 in
                let remaining = deadline - now
                return max(0, Int32(clamping: remaining.components.seconds * 1_000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1))
            } ?? -1
            return (enabled, wait, stopping)
        }
    }

    /// The timeouts that are due, each re-armed for its next interval.
    private func dueTimeouts() -> [OpaquePointer] {
        lock.withLock { _ in
            let now = ContinuousClock.now
            let due = timeouts.filter { $0.value <= now }.map(\.key)
            for timeout in due { arm(timeout) }
            return due
        }
    }

    /// Records `timeout`'s next deadline (or forgets it while disabled). Call with the lock held.
    private func arm(_ timeout: OpaquePointer) {
        timeouts[timeout] = dbus_timeout_get_enabled(timeout) != 0
            ? ContinuousClock.now + .milliseconds(Int(dbus_timeout_get_interval(timeout))) : nil
    }

    private func update(_ change: (DBusMainLoop) -> Void) {
        lock.withLock { _ in change(self) }
        wake()
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private static func loop(_ context: UnsafeMutableRawPointer?) -> DBusMainLoop {
        Unmanaged<DBusMainLoop>.fromOpaque(context!).takeUnretainedValue()
    }
}
