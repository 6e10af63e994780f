import CENDBus
import ENCore
import FoundationEssentials
import Glibc
import Dispatch
import Synchronization

/// libdbus's error struct; `DBusError` in this module is the Swift error.
typealias CDBusError = CENDBus.DBusError

/// A private connection to a message bus, with its own dispatcher thread.
///
/// Incoming method calls (to exported objects) and signals are handled on the dispatcher thread;
/// their handlers must not block on a call through this connection, because the reply would wait
/// behind them. Blocking calls are made from any other thread. This matters with BlueZ, which
/// calls back into an advertisement object while RegisterAdvertisement is pending.
///
/// Sendable by hand: libdbus connections are thread-safe once `dbus_threads_init_default` ran;
/// the Swift state is under `state`'s Mutex, and `dispatcher` is set once, before any other thread
/// can see the connection.
public final class DBusConnection: @unchecked Sendable {
    /// Handles a signal; runs on the dispatcher thread.
    public typealias SignalHandler = @Sendable (DBusMessage) -> Void

    let raw: OpaquePointer
    private let state = Mutex(State())
    private let loop = DBusMainLoop()
    private var dispatcher: DedicatedThread?

    private struct State {
        var objects = [String: ExportedObject]()
        var subscriptions = [Subscription]()
        var nextSubscription = 0
        var closed = false
        var budget: CallBudget?
    }

    struct Subscription {
        let id: Int
        let rule: MatchRule
        let handler: SignalHandler
    }

    /// The most file descriptors one message may carry: libdbus and dbus-daemon both drop a
    /// connection that sends more (`max_message_unix_fds`), so longer lists go in several calls.
    public static let maximumDescriptorsPerMessage = 16

    /// Connects to the system bus, or to `DBUS_SYSTEM_BUS_ADDRESS` when it is set.
    public static func system() throws(DBusError) -> DBusConnection {
        try DBusConnection(address: ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
                           ?? "unix:path=/run/dbus/system_bus_socket")
    }

    /// Connects to the bus at `address` and registers with it.
    public init(address: String) throws(DBusError) {
        dbus_threads_init_default()
        var error = CDBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else { throw Self.take(&error) }
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw Self.take(&error)
        }
        raw = connection
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let unmanaged = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_add_filter(raw, { _, message, context in
            let connection = Unmanaged<DBusConnection>.fromOpaque(context!).takeUnretainedValue()
            return connection.filter(DBusMessage(borrowing: message!))
        }, unmanaged, nil)
        loop.attach(to: raw)
        // The thread holds the loop and the connection, never self: deinit waits for it to end.
        let loop = loop
        nonisolated(unsafe) let dispatched = raw  // unref'd only after the thread has ended
        dispatcher = DedicatedThread {
            guard loop.run(dispatched) == .released else { return }
            dbus_connection_flush(dispatched)
            dbus_connection_close(dispatched)
            dbus_connection_unref(dispatched)
        }
    }

    deinit {
        if dispatcher?.isCurrent == true {
            // The last reference went in a handler on the dispatcher thread, which cannot wait
            // for itself: the thread lets go of the connection when its loop returns.
            loop.release()
            dispatcher?.detach()
        } else {
            close()
            dbus_connection_unref(raw)
        }
    }

    /// Disconnects; exported objects vanish from the bus and pending calls fail.
    public func close() {
        let wasOpen = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        loop.stop()
        if dispatcher?.isCurrent == true { dispatcher?.detach() } else { dispatcher?.join() }
        dbus_connection_flush(raw)  // what was sent last, such as a call that wants no reply
        dbus_connection_close(raw)
    }

    public var isConnected: Bool { dbus_connection_get_is_connected(raw) != 0 }

    /// This connection's unique name, such as `:1.42`.
    public var uniqueName: String { dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? "" }

    // MARK: Calls

    /// Sends `message` and waits at most `timeout` for the reply; an error reply is thrown.
    ///
    /// Off the dispatcher thread the call is asynchronous underneath and the dispatcher does all
    /// the I/O: libdbus's blocking call only reads while it waits, so a reply this process owes
    /// the peer meanwhile (BlueZ asks for the advertisement's properties during
    /// RegisterAdvertisement) would stay unsent until the call timed out.
    public func call(_ message: DBusMessage, timeout: Duration = .seconds(25)) throws(DBusError) -> DBusMessage {
        let milliseconds = Self.milliseconds(timeout)
        let reply: DBusMessage
        if dispatcher?.isCurrent == true {
            var error = CDBusError()
            dbus_error_init(&error)
            guard let raw = dbus_connection_send_with_reply_and_block(raw, message.raw, milliseconds, &error) else { throw Self.take(&error) }
            reply = DBusMessage(owning: raw)
        } else {
            reply = try awaitReply(message, milliseconds: milliseconds)
        }
        if let error = reply.error { throw error }
        return reply
    }

    private func awaitReply(_ message: DBusMessage, milliseconds: Int32) throws(DBusError) -> DBusMessage {
        let call = PendingCall()
        nonisolated(unsafe) let connection = raw
        loop.perform {
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(connection, message.raw, &pending, milliseconds) != 0, let pending else { return call.sent(nil) }
            let context = Unmanaged.passRetained(call).toOpaque()
            dbus_pending_call_set_notify(pending, { _, context in
                Unmanaged<PendingCall>.fromOpaque(context!).takeUnretainedValue().done.signal()
            }, context, { context in
                Unmanaged<PendingCall>.fromOpaque(context!).release()
            })
            call.sent(pending)
        }
        call.sentSignal.wait()
        guard let pending = call.pending else {
            throw DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected to the bus")
        }
        defer { dbus_pending_call_unref(pending) }
        // A connection lost under the call (libdbus drops one whose message the bus refuses, such
        // as one with too many descriptors) may never complete it: the wait looks at the
        // connection and the deadline too.
        let deadline = ContinuousClock.now + .milliseconds(Int64(milliseconds) + 1_000)
        while dbus_pending_call_get_completed(pending) == 0 && call.done.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            guard isConnected, ContinuousClock.now < deadline else {
                dbus_pending_call_cancel(pending)
                throw isConnected ? DBusError(name: DBusError.noReply, message: "no reply within \(milliseconds) ms")
                    : DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "the connection to the bus was lost during the call")
            }
        }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            throw DBusError(name: DBusError.noReply, message: "no reply")
        }
        return DBusMessage(owning: reply)
    }

    /// Sends `message` and returns at once; `answered` runs on the dispatcher thread once the
    /// reply comes: nil for a plain one, else its error (NoReply after `timeout`, or from the bus
    /// when the peer leaves it without answering). For a caller that must learn when the peer has
    /// read a call but cannot wait for it.
    public func call(_ message: DBusMessage, timeout: Duration, whenAnswered answered: @escaping @Sendable (DBusError?) -> Void) {
        let milliseconds = Self.milliseconds(timeout)
        nonisolated(unsafe) let connection = raw
        loop.perform {
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(connection, message.raw, &pending, milliseconds) != 0, let pending else {
                return answered(DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: "not connected to the bus"))
            }
            // The dispatcher does all the I/O, so the reply cannot complete the call before its notify is set.
            dbus_pending_call_set_notify(pending, { pending, context in
                let reply = dbus_pending_call_steal_reply(pending).map { DBusMessage(owning: $0) }
                Unmanaged<Answer>.fromOpaque(context!).takeUnretainedValue().answered(reply.map(\.error) ?? DBusError(name: DBusError.noReply, message: "no reply"))
            }, Unmanaged.passRetained(Answer(answered)).toOpaque(), { context in
                Unmanaged<Answer>.fromOpaque(context!).release()
            })
            // The connection keeps the call until it completes.
            dbus_pending_call_unref(pending)
        }
    }

    /// `timeout` as libdbus takes it; the longest, Int32.max, is DBUS_TIMEOUT_INFINITE.
    private static func milliseconds(_ timeout: Duration) -> Int32 {
        Int32(clamping: timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
    }

    /// Calls a method and returns the reply's arguments.
    @discardableResult
    public func call(destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
                     timeout: Duration = .seconds(25)) throws(DBusError) -> [DBusValue] {
        try call(DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member, arguments),
                 timeout: timeout).arguments
    }

    /// The bus itself, as a peer: its name, object and interface (GetNameOwner, NameHasOwner,
    /// GetConnectionUnixUser, GetId; the NameOwnerChanged signal).
    public static let bus = (name: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus")

    /// Calls a method of the bus itself (`bus`) and returns the reply's arguments.
    @discardableResult
    public func callBus(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) throws(DBusError) -> [DBusValue] {
        try call(destination: Self.bus.name, path: Self.bus.path, interface: Self.bus.interface, member: member, arguments, timeout: timeout)
    }

    /// Sends a method call marked as expecting no reply and returns at once: for calls whose
    /// answer changes nothing (such as many RemoveDevice calls in a row), so the caller never waits
    /// a round trip per call.
    public func callWithoutReply(destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = []) throws(DBusError) {
        let message = try DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member, arguments)
        dbus_message_set_no_reply(message.raw, 1)
        send(message)
    }

    /// Queues `message` (a signal or a reply) for sending, by the dispatcher thread.
    public func send(_ message: DBusMessage) {
        nonisolated(unsafe) let connection = raw
        loop.perform { dbus_connection_send(connection, message.raw, nil) }
    }

    /// Asks the bus for a well-known name; fails if another connection has it.
    public func requestName(_ name: String) throws(DBusError) {
        var error = CDBusError()
        dbus_error_init(&error)
        let result = dbus_bus_request_name(raw, name, UInt32(CENDBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        if dbus_error_is_set(&error) != 0 { throw Self.take(&error) }
        guard result == CENDBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER else {
            throw DBusError(name: "org.freedesktop.DBus.Error.AddressInUse", message: "the bus name \(name) is already owned")
        }
    }

    // MARK: Signals

    /// Calls `handler` for every signal matching `rule` (on the dispatcher thread) until cancelled.
    public func subscribe(_ rule: MatchRule, _ handler: @escaping SignalHandler) throws(DBusError) -> SignalSubscription {
        var error = CDBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(raw, rule.text, &error)
        if dbus_error_is_set(&error) != 0 { throw Self.take(&error) }
        let id = state.withLock { state in
            state.nextSubscription += 1
            state.subscriptions.append(Subscription(id: state.nextSubscription, rule: rule, handler: handler))
            return state.nextSubscription
        }
        return SignalSubscription(connection: self, id: id)
    }

    func unsubscribe(_ id: Int) {
        let rule = state.withLock { state -> MatchRule? in
            guard let index = state.subscriptions.firstIndex(where: { $0.id == id }) else { return nil }
            return state.subscriptions.remove(at: index).rule
        }
        if let rule, isConnected { dbus_bus_remove_match(raw, rule.text, nil) }
    }

    /// Emits a signal: to every connection whose match rules take it, or to `destination` only.
    public func emit(path: String, interface: String, member: String, destination: String? = nil, _ arguments: [DBusValue]) throws(DBusError) {
        send(try DBusMessage.signal(path: path, interface: interface, member: member, destination: destination, arguments))
    }

    // MARK: Objects

    /// Refuses method calls beyond `budget` with LimitsExceeded, per sender (nil: no limit).
    public func limitCalls(_ budget: CallBudget?) {
        state.withLock { $0.budget = budget }
    }

    /// Serves `object` at its path until it is withdrawn or the connection closes.
    public func export(_ object: ExportedObject) throws(DBusError) {
        try state.withLock { (state) throws(DBusError) in
            guard state.objects[object.path] == nil else {
                throw DBusError(name: DBusError.failed, message: "an object is already exported at \(object.path)")
            }
            state.objects[object.path] = object
        }
        object.connection = self
    }

    public func withdraw(_ object: ExportedObject) {
        state.withLock { state in
            if state.objects[object.path] === object { state.objects[object.path] = nil }
        }
    }

    // MARK: Dispatching

    private func filter(_ message: DBusMessage) -> DBusHandlerResult {
        switch message.kind {
        case .signal:
            let handlers = state.withLock { $0.subscriptions.filter { $0.rule.matches(message) }.map(\.handler) }
            handlers.forEach { $0(message) }
            // Others (libdbus's own Disconnected handling) may want the signal too.
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case .methodCall:
            let wantsReply = message.expectsReply
            let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
            let sender = message.sender ?? ""
            guard state.withLock({ $0.budget?.allows(sender, now: now) ?? true }) else {
                if wantsReply {
                    send(message.errorReply(DBusError(name: DBusError.limitsExceeded, message: "too many calls from \(sender): slow down")))
                }
                return DBUS_HANDLER_RESULT_HANDLED
            }
            let path = message.path ?? "/"
            let target = state.withLock { state in state.objects[path] }
            let reply = target.map { $0.handle(message) } ?? ExportedObject.handleUnknown(message, path: path, children: childNodes(of: path))
            if let reply, wantsReply { send(reply) }
            return DBUS_HANDLER_RESULT_HANDLED
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }

    /// The names of the nodes directly below `path`, for introspection.
    static func children(of path: String, in paths: some Sequence<String>) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        return Set(paths.filter { $0.hasPrefix(prefix) && $0 != path }
            .map { String($0.dropFirst(prefix.count).split(separator: "/").first ?? "") }).sorted()
    }

    func childNodes(of path: String) -> [String] {
        state.withLock { Self.children(of: path, in: $0.objects.keys) }
    }

    private static func take(_ error: inout CDBusError) -> DBusError {
        defer { dbus_error_free(&error) }
        return DBusError(name: error.name.map { String(cString: $0) } ?? DBusError.failed,
                         message: error.message.map { String(cString: $0) } ?? "")
    }
}

/// Ends a signal subscription when cancelled.
public final class SignalSubscription: Sendable {
    // Written once, in init (Swift 6.0 has no `weak let`); weak references are atomic.
    nonisolated(unsafe) private weak var connection: DBusConnection?
    private let id: Int

    init(connection: DBusConnection, id: Int) {
        self.connection = connection
        self.id = id
    }

    public func cancel() { connection?.unsubscribe(id) }
}

/// What to do with the answer of a call nobody waits for (`call(_:timeout:whenAnswered:)`).
private final class Answer: Sendable {
    let answered: @Sendable (DBusError?) -> Void
    init(_ answered: @escaping @Sendable (DBusError?) -> Void) { self.answered = answered }
}

/// A call handed to the dispatcher thread: the pending call once sent, and its completion.
/// Sendable by hand: `pending` is written before `sentSignal` is signalled and read only after
/// waiting for it.
private final class PendingCall: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    let sentSignal = DispatchSemaphore(value: 0)
    private(set) var pending: OpaquePointer?

    func sent(_ pending: OpaquePointer?) {
        self.pending = pending
        sentSignal.signal()
    }
}
