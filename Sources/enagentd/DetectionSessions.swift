import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENKeyFiles
import FoundationEssentials
import Glibc
import ENSystemd
import Synchronization

/// The API's detection sessions. One is open at a time: each holds a sighting index and its day
/// filters (about 36 bytes a sighting) and its batches use every core. A session belongs to the bus connection
/// that started it and ends with FinishDetection or CancelDetection, when its owner leaves the
/// bus, or after `idleLimit` without a call, so that a client that dies holds nothing for long.
final class DetectionSessions: Sendable {
    typealias API = ExposureNotificationAPI

    private struct Open {
        let id: String
        let owner: String
        let cancellation = CancellationFlag()
        /// nil while one of its batches runs.
        var session: DetectionSession?
        var idleTimer: DispatchSourceTimer?
        var ownerWatch: SignalSubscription?

        func close() {
            idleTimer?.cancel()
            ownerWatch?.cancel()
        }
    }

    /// Sendable by hand: it lives in the mutex, and a DispatchSourceTimer is thread-safe to cancel.
    private struct State: @unchecked Sendable {
        var open: Open?
    }

    private let state = Mutex(State())
    let idleLimit: Duration
    private let bus: DBusConnection?
    let logger: Logger

    /// `bus`, when given, is watched for owners leaving it.
    init(bus: DBusConnection?, idleLimit: Duration = .seconds(600), logger: Logger) {
        self.bus = bus
        self.idleLimit = idleLimit
        self.logger = logger
    }

    /// Opens `session` for `owner` and returns its name.
    func open(_ session: DetectionSession, owner: String) throws(DBusError) -> String {
        let id = UUID().uuidString.lowercased()
        try state.withLock { (state) throws(DBusError) in
            if let open = state.open { throw Self.busy(open) }
            state.open = Open(id: id, owner: owner, session: session)
            state.open!.idleTimer = idleTimer(for: id)
        }
        watchOwner(of: id, owner)
        logger.info("detection session \(id) started by \(owner)")
        return id
    }

    /// Takes the session out for a batch; `giveBack` returns it (unless it was cancelled meanwhile).
    func take(_ id: String, owner: String) throws(DBusError) -> (session: DetectionSession, cancellation: CancellationFlag) {
        try state.withLock { (state) throws(DBusError) in
            let (open, session) = try Self.findIdle(id, owner: owner, in: state)
            state.open!.session = nil
            state.open!.idleTimer?.cancel()
            state.open!.idleTimer = nil
            return (session, open.cancellation)
        }
    }

    func giveBack(_ id: String, _ session: DetectionSession) {
        state.withLock { state in
            guard state.open?.id == id else { return }
            state.open!.session = session
            state.open!.idleTimer = idleTimer(for: id)
        }
    }

    /// Ends the session and returns it, for FinishDetection.
    func end(_ id: String, owner: String) throws(DBusError) -> DetectionSession {
        let session = try state.withLock { (state) throws(DBusError) in
            let (open, session) = try Self.findIdle(id, owner: owner, in: state)
            open.close()
            state.open = nil
            return session
        }
        logger.info("detection session \(id) finished")
        return session
    }

    /// Ends the session, stopping a batch that runs; nothing of it is recorded.
    func cancel(_ id: String, owner: String) throws(DBusError) {
        try state.withLock { (state) throws(DBusError) in
            let open = try Self.find(id, owner: owner, in: state)
            open.cancellation.set()
            open.close()
            state.open = nil
        }
        logger.info("detection session \(id) cancelled")
    }

    /// Ends session `id` without its owner's word (owner gone, idle too long), saying why in the journal.
    private func drop(_ id: String, because reason: String) {
        let dropped = state.withLock { state -> Bool in
            guard let open = state.open, open.id == id else { return false }
            open.cancellation.set()
            open.close()
            state.open = nil
            return true
        }
        if dropped { logger.warning("detection session \(id) ended unfinished: \(reason); nothing of it was recorded") }
    }

    private func idleTimer(for id: String) -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let (seconds, attoseconds) = idleLimit.components
        timer.schedule(deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
        timer.setEventHandler { [weak self, idleLimit] in self?.drop(id, because: "no call for \(idleLimit)") }
        timer.resume()
        return timer
    }

    private func watchOwner(of id: String, _ owner: String) {
        guard let bus else { return }
        do {
            let watch = try bus.whenGone(owner) { [weak self] in self?.drop(id, because: "its owner \(owner) left the bus") }
            let kept = state.withLock { state -> Bool in
                guard state.open?.id == id else { return false }
                state.open!.ownerWatch = watch
                return true
            }
            if !kept { watch.cancel() }
        } catch {
            logger.warning("cannot watch \(owner) on the bus (\(error)); its detection session ends when idle for \(idleLimit)")
        }
    }

    private static func find(_ id: String, owner: String, in state: State) throws(DBusError) -> Open {
        guard let open = state.open, open.id == id, open.owner == owner else {
            throw API.Failure.unknownSession.error("no detection session \(id) of this caller: it ended (finished, cancelled, or idle too long) or is another's")
        }
        return open
    }

    /// The session and its state between batches; Busy while one of its batches runs.
    private static func findIdle(_ id: String, owner: String, in state: State) throws(DBusError) -> (Open, DetectionSession) {
        let open = try find(id, owner: owner, in: state)
        guard let session = open.session else { throw API.Failure.busy.error("a batch of detection session \(id) is still running") }
        return (open, session)
    }

    private static func busy(_ open: Open) -> DBusError {
        API.Failure.busy.error("another detection session (\(open.id), of \(open.owner)) is open; one runs at a time, try again when it ends")
    }

    /// Refuses with Busy while a session is open: one detection at a time.
    func requireNoneOpen() throws(DBusError) {
        if let open = state.withLock({ $0.open }) { throw Self.busy(open) }
    }
}
