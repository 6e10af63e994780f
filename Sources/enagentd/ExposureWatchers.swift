import ENBus
import ENSystemd
import Synchronization

/// The bus connections that asked for ExposureDetected (WatchExposures, which only root and the
/// group enagent may call). The signal goes to each of them by name, never as a broadcast: the
/// bus would hand a broadcast to anyone with a match rule for it, and that an exposure was found
/// is health data. A watcher is forgotten when it leaves the bus.
final class ExposureWatchers: Sendable {
    private struct State {
        var names = Set<String>()
        var departures = [String: SignalSubscription]()
    }

    private let state = Mutex(State())
    private let bus: DBusConnection?
    private let logger: Logger

    /// `bus`, when given, is watched for watchers leaving it.
    init(bus: DBusConnection?, logger: Logger) {
        self.bus = bus
        self.logger = logger
    }

    var names: [String] { state.withLock { $0.names.sorted() } }

    func add(_ name: String) throws(DBusError) {
        guard state.withLock({ $0.names.insert(name).inserted }) else { return }
        logger.info("\(name) watches for exposures")
        guard let bus else { return }
        let departure: SignalSubscription
        do { departure = try bus.whenGone(name) { [weak self] in self?.remove(name) } } catch {
            remove(name)
            throw error
        }
        let kept = state.withLock { state -> Bool in
            guard state.names.contains(name) else { return false }
            state.departures[name] = departure
            return true
        }
        if !kept { departure.cancel() }
    }

    private func remove(_ name: String) {
        state.withLock { state -> SignalSubscription? in
            state.names.remove(name)
            return state.departures.removeValue(forKey: name)
        }?.cancel()
    }
}
