import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENCore
import ENKeyFiles
import ENStore
import Glibc
import ENSystemd

/// The daemon's state and its running parts: the key schedule's upkeep and the radio run while
/// the status allows (consent given, not paused, clock trusted).
///
/// Its mutable members live in `onQueue`, bound to `queue` (the main queue in enagentd); other
/// threads (the D-Bus service, the radio's queue) come in through `perform` or `queue.async`.
/// The store, the clock and the detection engine are immutable and thread-safe themselves.
final class Daemon: Sendable {
    /// Where the daemon's state lives.
    let queue: DispatchQueue
    let store: AgentStore
    let clock: any AgentClock
    let retention: RetentionPolicy
    /// Nil without a radio (--no-radio, or no system bus in tests).
    let radioStarter: RadioStarter?
    let logger: Logger
    let detection: ExposureDetection
    let synchronisation: (any ClockSynchronisation)?
    /// Where the status line goes: systemd's STATUS= (`systemctl status enagentd`).
    private let reportStatus: @Sendable (String) -> Void
    private let onQueue: QueueBound<Confined>

    /// What the daemon changes as it runs, on `queue` only: a part per concern, each owning its
    /// timers and subscriptions.
    struct Confined {
        /// The key schedule's upkeep, one for the daemon's life: the clock steps it has seen outlast a pause.
        var upkeep: Upkeep?
        /// What runs while the status allows it; nil while it does not.
        var running: Running?
        var statusLook = StatusLook()
        /// The radio's state as the agent last derived it, the adapter in use with it.
        var radio = RadioState()
        var announcer = Announcer()
        var reminders = Reminders()
    }

    /// The upkeep's timer and the radio, while the status allows them: `stop()` ends both.
    struct Running {
        let upkeepTimer: any DispatchSourceTimer
        /// Nil without a radio (no system bus).
        let radio: RadioRun?

        func stop() {
            upkeepTimer.cancel()
            radio?.stop()
        }
    }

    /// What the last look at the status found besides the status.
    struct StatusLook {
        /// Why the store could not be read, if it could not.
        var storeReadError: String?
        /// Looks at the status again when it changes by itself: when the pause ends, or a while after
        /// the store could not be read.
        var recheckTimer: (any DispatchSourceTimer)?
        var clockTrusted = false
    }

    /// Where the daemon's changes and signals go: the API's object.
    struct Announcer {
        /// Called with the facts that may have changed.
        var onChange: ((Set<DaemonFact>) -> Void)?
        weak var serviceObject: ExportedObject?
    }

    /// What to remind the person of, and when each went to the journal last.
    struct Reminders {
        var due = [Reminder]()
        var remindedAt = [Reminder: Int64]()
        var timer: (any DispatchSourceTimer)?
    }

    /// Its mutable members, on `queue` only.
    var my: Confined {
        get { onQueue.value }
        _modify { yield &onQueue.value }
    }

    var radioState: RadioState { my.radio }
    var adapterName: String { my.radio.adapter?.name ?? "" }
    var reminders: [Reminder] { my.reminders.due }
    /// Called on `queue` with the facts that may have changed.
    var onChange: ((Set<DaemonFact>) -> Void)? { my.announcer.onChange }
    var radioAgent: RadioAgent? { my.running?.radio?.agent }

    /// Makes `object` the API's object, whose signals the daemon sends, and announces on it the
    /// properties of the facts that changed (`ExposureNotificationService.names(changedWith:)`)
    /// whose value changed (ExportedObject leaves out those that did not). The announcement reads
    /// the properties as a caller does, from a queue of its own, in order.
    func announceChanges(through object: ExportedObject) {
        my.announcer.serviceObject = object
        let announcements = DispatchQueue(label: "enagent.announcements")
        let announce: @Sendable (Set<DaemonFact>) -> Void = { [logger] facts in
            let names = ExposureNotificationService.names(changedWith: facts)
            announcements.async {
                do { try object.propertiesChanged(interface: ExposureNotificationAPI.interface, names) } catch {
                    logger.error("cannot announce the change of \(names.joined(separator: ", ")): \(error)")
                }
            }
        }
        my.announcer.onChange = announce
        // The radio's batches change SightingsStored (the database counts them as it stores them).
        store.whenSightingsRecorded { announce([.sightings]) }
    }

    /// While the store cannot be read, look again this often.
    static let storeRetrySeconds = 10.0

    /// `radio` starts the radio while the status allows it; nil runs none.
    init(store: AgentStore, clock: any AgentClock, retention: RetentionPolicy, synchronisation: (any ClockSynchronisation)?,
         radio: RadioStarter?, trustedKeys: TrustedKeySource, rssiCorrections: RssiCorrections = RssiCorrections(),
         riskConfiguration: RiskConfigurationSource = .standard, logger: Logger,
         queue: DispatchQueue = .main, reportStatus: @escaping @Sendable (String) -> Void = { Systemd.notify("STATUS=" + $0) }) {
        self.queue = queue
        onQueue = QueueBound(Confined(), queue: queue)
        self.reportStatus = reportStatus
        self.store = store
        self.clock = clock
        self.retention = retention
        self.synchronisation = synchronisation
        radioStarter = radio
        self.logger = logger
        detection = ExposureDetection(store: store, clock: clock, trustedKeys: trustedKeys, rssiCorrections: rssiCorrections,
                                      riskConfiguration: riskConfiguration)
    }

    /// Runs `body` on `queue` and returns its result: the way in for other threads (the D-Bus
    /// service's handlers and property getters, the announcements).
    func perform<T>(_ body: () throws -> T) rethrows -> T {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync(execute: body)
    }

    /// Sends one of the API's signals (on `queue`), to every listener or to `destination` only; a
    /// signal that cannot be sent goes to the journal.
    func emit<Arguments>(_ signal: SignalContract<Arguments>, _ arguments: Arguments, to destination: String? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        do { try my.announcer.serviceObject?.emit(interface: ExposureNotificationAPI.interface, signal: signal.name, destination: destination, arguments.values) } catch {
            logger.error("cannot send the signal \(signal.name): \(error)")
        }
    }

    // MARK: State

    var consent: ConsentEvent? { get throws { try store.currentConsent() } }
    var enabled: Bool { get throws { try consent?.granted == true } }
    /// The end of a pause still running, else 0.
    var pausedUntil: Int64 {
        get throws {
            guard let until = try storedPausedUntil(), until > clock.now else { return 0 }
            return until
        }
    }

    /// The end of the pause as stored, if any (it may lie in the past).
    private func storedPausedUntil() throws -> Int64? {
        try store.value(StoreSettings.pausedUntil)
    }

    /// The status; a store that cannot be read makes it `store-unreadable` (and a journal entry),
    /// never a guess such as "no consent".
    var status: AgentStatus { readStatus().status }

    /// The status, with the end of the pause when paused: both from one look at the store, so that
    /// a read failing between two looks cannot leave "paused" without its end.
    private func readStatus() -> (status: AgentStatus, pauseEnd: Int64?) {
        do {
            let consent = try store.currentConsent()
            let paused = try storedPausedUntil()
            my.statusLook.storeReadError = nil
            let status = AgentStatus.of(consent: consent, pausedUntil: paused, now: clock.now, clockTrusted: my.statusLook.clockTrusted,
                                        radioProblem: radioAgent == nil ? nil : my.radio.problem)
            return (status, status == .paused ? paused : nil)
        } catch {
            if my.statusLook.storeReadError == nil { logger.error("cannot read the agent's state: \(error)") }
            my.statusLook.storeReadError = "\(error)"
            return (.storeUnreadable, nil)
        }
    }

    /// The clock can be trusted from now on.
    func clockBecameTrusted() {
        dispatchPrecondition(condition: .onQueue(queue))
        my.statusLook.clockTrusted = true
        apply()
    }

    /// Starts or stops the running parts to match the status, and tells systemd and the bus of the
    /// status, the radio (which starting or stopping changes) and the facts `changed` besides.
    /// Starting or stopping never changes the status: only statuses that run the agent depend on the radio.
    func apply(changed: Set<DaemonFact> = []) {
        dispatchPrecondition(condition: .onQueue(queue))
        let (status, pauseEnd) = readStatus()
        if let pauseEnd {
            recheckStatus(after: clock.realSeconds(until: pauseEnd))
        } else if status == .storeUnreadable {
            recheckStatus(after: Self.storeRetrySeconds)
        } else {
            my.statusLook.recheckTimer?.cancel()
            my.statusLook.recheckTimer = nil
        }
        if status.runsAgent && my.running == nil {
            do { try startRunning() } catch {
                logger.critical("cannot start: \(error)")
                Glibc.exit(1)
            }
        } else if !status.runsAgent && my.running != nil {
            stopRunning()
        }
        reportStatus(statusText(status, pauseEnd: pauseEnd))
        my.announcer.onChange?(changed.union([.status, .radio]))
    }

    private func statusText(_ status: AgentStatus, pauseEnd: Int64?) -> String {
        status.line(StatusDetails(radioOff: radioStarter == nil, pauseEnd: pauseEnd, adapter: adapterName, configuredAdapter: radioStarter?.configuredAdapter,
                                  advertisingResumesAt: my.radio.advertisingResumesAt, storePath: store.path, storeReadError: my.statusLook.storeReadError,
                                  storeRetrySeconds: Int(Self.storeRetrySeconds)))
    }

    var adapterRssiCorrections: [AdapterRssiCorrection] {
        dispatchPrecondition(condition: .onQueue(queue))
        return Self.adapterRssiCorrections(detection.rssiCorrections, adapterInUse: adapterName, address: my.radio.adapter?.address)
    }

    /// The adapter in use (its name "" when there is none), then every other adapter
    /// `corrections` names, by address, each with the correction detection gives its sightings.
    static func adapterRssiCorrections(_ corrections: RssiCorrections, adapterInUse name: String,
                                       address: BluetoothAddress?) -> [AdapterRssiCorrection] {
        func listed(_ address: BluetoothAddress?, name: String) -> AdapterRssiCorrection {
            AdapterRssiCorrection(address: address?.description ?? "", name: name, rssiCorrection: Int32(corrections.correction(for: address)),
                                  configured: address.map { corrections.byAdapter[$0] != nil } ?? false)
        }
        let inUse = name.isEmpty ? [] : [listed(address, name: name)]
        return inUse + corrections.byAdapter.keys.sorted().filter { $0 != address }.map { listed($0, name: "") }
    }

    /// Stops the radio (writing pending sightings) and closes the database.
    func stop() {
        stopRunning()
        do { try store.close() } catch { logger.error("\(error)") }
    }

    /// Whether the radio's queue still answers (for the watchdog).
    var isHealthy: Bool { radioAgent?.isResponsive ?? true }
}
