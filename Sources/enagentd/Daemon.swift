import Dispatch
import ENAgent
import ENAPI
import ENBlueZ
import ENBus
import ENCore
import ENKeyFiles
import ENRadio
import ENStore
import FoundationEssentials
import Glibc
import ENSystemd

/// The daemon's state and its running parts: the key schedule's upkeep and the radio run while
/// the status allows (consent given, not paused, clock trusted).
///
/// Its mutable members live in `onQueue`, bound to `queue` (the main queue in enagentd); other
/// threads (the D-Bus service, the radio's queue) come in through `perform` or `queue.async`.
/// The store, the clock and the detection engine are immutable and thread-safe themselves.
final class Daemon: Sendable {
    private typealias P = ExposureNotificationAPI.Properties
    /// Where the daemon's state lives.
    let queue: DispatchQueue
    private let queueMark = QueueMark()
    let store: AgentStore
    let clock: any AgentClock
    private let retention: RetentionPolicy
    private let radioSettings: RadioSettings
    private let bus: DBusConnection?
    private let logger: Logger
    let detection: ExposureDetection
    private let synchronisation: (any ClockSynchronisation)?
    /// Where the status line goes: systemd's STATUS= (`systemctl status enagentd`).
    private let reportStatus: @Sendable (String) -> Void
    private let onQueue: QueueBound<Confined>

    /// What the daemon changes as it runs, on `queue` only.
    private struct Confined {
        var upkeepTimer: (any DispatchSourceTimer)?
        var upkeep: Upkeep?
        /// Why the store could not be read at the last look, if it could not.
        var storeReadError: String?
        /// Looks at the status again when it changes by itself: when the pause ends, or a while after
        /// the store could not be read.
        var recheckTimer: (any DispatchSourceTimer)?
        var radioAgent: RadioAgent?
        var subscriptions = [SignalSubscription]()
        var managementWatch: (any ManagementWatch)?
        /// systemd-logind's delay lock on sleep, held while the radio runs.
        var sleepInhibitor: SleepInhibitor?
        var clockTrusted = false
        var radioState = RadioState()
        var adapterName = ""
        /// The address of the adapter in use, once BlueZ has given it.
        var adapterAddress: BluetoothAddress?
        var onChange: (([String]) -> Void)?
        weak var serviceObject: ExportedObject?
        var reminders = [Reminder]()
        var remindedAt = [Reminder: Int64]()
        var reminderTimer: (any DispatchSourceTimer)?
    }

    private var my: Confined {
        get { onQueue.value }
        _modify { yield &onQueue.value }
    }

    var radioState: RadioState { my.radioState }
    var adapterName: String { my.adapterName }
    var reminders: [Reminder] { my.reminders }
    /// Called on `queue` with the names of the D-Bus properties that changed.
    var onChange: (([String]) -> Void)? {
        get { my.onChange }
        set { my.onChange = newValue }
    }
    /// The exported API object, for its signals.
    var serviceObject: ExportedObject? {
        get { my.serviceObject }
        set { my.serviceObject = newValue }
    }

    /// While the store cannot be read, look again this often.
    static let storeRetrySeconds = 10.0

    /// `bus` is the system bus when the radio is in use.
    init(store: AgentStore, clock: any AgentClock, retention: RetentionPolicy, synchronisation: (any ClockSynchronisation)?,
         radioSettings: RadioSettings, bus: DBusConnection?, trustedKeys: [TrustedKey], rssiCorrections: RssiCorrections = RssiCorrections(), logger: Logger,
         queue: DispatchQueue = .main, reportStatus: @escaping @Sendable (String) -> Void = { Systemd.notify("STATUS=" + $0) }) {
        self.queue = queue
        onQueue = QueueBound(Confined(), queue: queue)
        self.reportStatus = reportStatus
        queue.setSpecific(key: queueMark.key, value: true)
        self.store = store
        self.clock = clock
        self.retention = retention
        self.synchronisation = synchronisation
        self.radioSettings = radioSettings
        self.bus = bus
        self.logger = logger
        detection = ExposureDetection(store: store, clock: clock, trustedKeys: trustedKeys, rssiCorrections: rssiCorrections)
    }

    /// Runs `body` on `queue` and returns its result; called from `queue` itself (a property read
    /// while PropertiesChanged is built) it runs at once instead of waiting for itself. (Under
    /// dispatchMain the main queue runs on worker threads, so Thread.isMainThread cannot tell.)
    func perform<T>(_ body: () throws -> T) rethrows -> T {
        try DispatchQueue.getSpecific(key: queueMark.key) != nil ? body() : queue.sync(execute: body)
    }

    /// Sends one of the API's signals (on `queue`), to every listener or to `destination` only; a
    /// signal that cannot be sent goes to the journal.
    func emit<Arguments>(_ signal: SignalContract<Arguments>, _ arguments: Arguments, to destination: String? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        do { try my.serviceObject?.emit(interface: ExposureNotificationAPI.interface, signal: signal.name, destination: destination, arguments.values) } catch {
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
            my.storeReadError = nil
            let status = AgentStatus.of(consent: consent, pausedUntil: paused, now: clock.now, clockTrusted: my.clockTrusted,
                                        radioProblem: my.radioAgent == nil ? nil : my.radioState.problem)
            return (status, status == .paused ? paused : nil)
        } catch {
            if my.storeReadError == nil { logger.error("cannot read the agent's state: \(error)") }
            my.storeReadError = "\(error)"
            return (.storeUnreadable, nil)
        }
    }

    /// The clock can be trusted from now on.
    func clockBecameTrusted() {
        dispatchPrecondition(condition: .onQueue(queue))
        my.clockTrusted = true
        apply()
    }

    /// Starts or stops the running parts to match the status, and tells systemd and the bus.
    /// Starting or stopping never changes the status: only statuses that run the agent depend on the radio.
    func apply(changed: [String] = []) {
        dispatchPrecondition(condition: .onQueue(queue))
        let (status, pauseEnd) = readStatus()
        if let pauseEnd {
            recheckStatus(after: clock.realSeconds(until: pauseEnd))
        } else if status == .storeUnreadable {
            recheckStatus(after: Self.storeRetrySeconds)
        } else {
            my.recheckTimer?.cancel()
            my.recheckTimer = nil
        }
        if status.runsAgent && my.upkeepTimer == nil {
            do { try startRunning() } catch {
                logger.critical("cannot start: \(error)")
                Glibc.exit(1)
            }
        } else if !status.runsAgent && my.upkeepTimer != nil {
            stopRunning()
        }
        reportStatus(statusText(status, pauseEnd: pauseEnd))
        my.onChange?(changed + [P.status.name, P.enabled.name, P.pausedUntil.name, P.advertising.name, P.scanning.name, P.adapter.name,
                            P.adapterRssiCorrections.name])
    }

    private func statusText(_ status: AgentStatus, pauseEnd: Int64?) -> String {
        status.line(StatusDetails(radioOff: bus == nil, pauseEnd: pauseEnd, adapter: my.adapterName, configuredAdapter: radioSettings.adapter?.description,
                                  advertisingResumesAt: my.radioState.advertisingResumesAt, storePath: store.path, storeReadError: my.storeReadError,
                                  storeRetrySeconds: Int(Self.storeRetrySeconds)))
    }

    var adapterRssiCorrections: [AdapterRssiCorrection] {
        dispatchPrecondition(condition: .onQueue(queue))
        return Self.adapterRssiCorrections(detection.rssiCorrections, adapterInUse: my.adapterName, address: my.adapterAddress)
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

    // MARK: Reminders

    var latestExposureDay: Int64? { get throws { try store.latestExposureDay() } }

    /// Checks now and every minute what to remind the person of; a reminder goes to the journal
    /// when it arises and once a day while it lasts.
    func startReminders() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .seconds(60))
        timer.setEventHandler { [weak self] in self?.checkReminders() }
        timer.resume()
        my.reminderTimer = timer
    }

    func checkReminders() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.now
        let exposureDay: Int64?, due: [Reminder]
        do {
            exposureDay = try latestExposureDay
            let consent = try consent
            due = Reminder.due(now: now, enabledSince: consent?.granted == true ? consent?.recordedAt : nil,
                               lastSuccessfulDetection: try store.lastSuccessfulDetection(), latestExposureDay: exposureDay,
                               uploadRefused: try store.testResults().first.map { $0.uploadFailure != nil } ?? false)
        } catch {
            return logger.error("cannot check reminders: \(error)")
        }
        for reminder in due where now - (my.remindedAt[reminder] ?? .min / 2) >= UTCDay.seconds {
            logger.warning("\(reminder.message(latestExposureDay: exposureDay))")
            my.remindedAt[reminder] = now
        }
        my.remindedAt = my.remindedAt.filter { due.contains($0.key) }
        if due != my.reminders {
            // PropertiesChanged reaches every listener: a change of the health reminders alone is
            // not announced, or its moment would tell that an exposure or a refusal came.
            let announced = due.filter { !$0.revealsHealth } != my.reminders.filter { !$0.revealsHealth }
            my.reminders = due
            if announced { my.onChange?([P.reminders.name]) }
        }
    }

    // MARK: Control

    /// Enabling records consent (the first time, and after every withdrawal); disabling stops the radio at once.
    func setEnabled(_ on: Bool) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        guard try on != enabled else { return }
        try store.recordConsent(ConsentEvent(granted: on, recordedAt: clock.now))
        if on { try store.set(StoreSettings.pausedUntil, to: nil) }
        logger.notice(on ? "enabled: consent recorded" : "disabled: consent withdrawn", event: on ? .consentGiven : .consentWithdrawn)
        apply()
    }

    func pause(seconds: UInt64) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let applied = min(seconds, PauseArguments.longestSeconds)
        let until = clock.now + Int64(applied)
        try store.set(StoreSettings.pausedUntil, to: until)
        logger.info("paused for \(applied) s, until \(until) (unix time)"
                    + (applied < seconds ? "; \(seconds) s were asked for, more than the longest pause, \(PauseArguments.longestSeconds) s" : ""))
        apply()
    }

    /// Applies the status again after `seconds`: a pause ends by itself (its end is in the store,
    /// so a restart keeps it), and a store that could not be read may be readable again.
    private func recheckStatus(after seconds: Double) {
        my.recheckTimer?.cancel()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + max(0, seconds))
        timer.setEventHandler { [weak self] in
            self?.my.recheckTimer = nil
            self?.apply()
        }
        timer.resume()
        my.recheckTimer = timer
    }

    func resume() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        try store.set(StoreSettings.pausedUntil, to: nil)
        logger.info("resumed")
        apply()
    }

    /// Keys whose validity has ended, within the retention window: today's key is released only
    /// once it has rolled, because it is still on the air.
    func releasableKeys() throws -> [TemporaryExposureKey] {
        guard let now = ENIntervalNumber(unixSeconds: clock.now) else { return [] }
        return try store.temporaryExposureKeys(validAfter: retention.cutoff(now: clock.now))
            .filter { $0.rollingEndIntervalNumber <= UInt64(now.rawValue) }
    }

    /// Records what became of an upload, and says so in the journal (never the keys).
    func uploadFinished(testResultId: String, _ result: UploadResult) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        try store.finishUpload(testResultId: testResultId, result, at: clock.now)
        checkReminders()
        switch result {
        case .accepted(_, let note):
            logger.info("the key server accepted the keys of test result \(testResultId)" + (note.map { " (\($0))" } ?? ""))
        case .retry(let reason, let retryAt):
            logger.warning("the key server did not take the keys of test result \(testResultId) for now (\(reason)); next attempt at \(retryAt) (unix time)")
        case .refused(let reason):
            logger.error("the key server refused the keys of test result \(testResultId) for good (\(reason)); the upload will not be sent again")
        }
    }

    /// Erases keys, sightings and results; a running agent starts again with a fresh key.
    func resetData() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let wasRunning = my.upkeepTimer != nil
        if wasRunning { stopRunning() }
        try store.eraseAllData()
        my.upkeep = nil  // its key schedule holds the erased key
        logger.info("all keys, sightings and exposure results erased")
        apply(changed: [P.sightingsStored.name, P.lastDetection.name, P.lastDetectionError.name])
    }

    /// Stops the radio (writing pending sightings) and closes the database.
    func stop() {
        stopRunning()
        do { try store.close() } catch { logger.error("\(error)") }
    }

    /// Whether the radio's queue still answers (for the watchdog).
    var isHealthy: Bool { my.radioAgent?.isResponsive ?? true }

    // MARK: Running parts

    private func startRunning() throws {
        // One upkeep for the daemon's life: the clock steps it has seen outlast a pause.
        let upkeep = my.upkeep ?? Upkeep(store: store, clock: clock, retention: retention, synchronisation: synchronisation, logger: logger)
        my.upkeep = upkeep
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler { [weak self, logger] in
            do {
                if try upkeep.run() { self?.my.radioAgent?.clockStepped() }
            } catch {
                logger.error("upkeep failed: \(error)")
            }
        }
        timer.resume()
        my.upkeepTimer = timer
        if let bus { my.radioAgent = try startRadio(on: bus) }
    }

    private func stopRunning() {
        my.upkeepTimer?.cancel()
        my.upkeepTimer = nil
        my.subscriptions.forEach { $0.cancel() }
        my.subscriptions = []
        my.managementWatch?.cancel()
        my.managementWatch = nil
        my.sleepInhibitor?.release()
        my.sleepInhibitor = nil
        my.radioAgent?.stop()
        my.radioAgent = nil
        my.radioState = RadioState()
    }

    /// Starts advertising and scanning through BlueZ.
    private func startRadio(on bus: DBusConnection) throws -> RadioAgent {
        // A scan that a pause for the advertisement could not resume is started anew, as after a return.
        let bluez = BlueZRadio(client: BlueZClient(connection: bus), management: KernelManagement(), adapter: radioSettings.adapter, mayPowerOn: radioSettings.powerOn, passiveScan: radioSettings.passiveScan, store: store, logger: logger,
                               onScanStopped: { [weak self, queue] in queue.async { [weak self] in self?.my.radioAgent?.radioReturned() } })
        do {
            let adapter = BlueZRadio.identity(of: try bluez.adapter())
            my.adapterName = adapter.name
            my.adapterAddress = adapter.address
        } catch {
            // Only the TX power's source depends on it here; the agent meets the same problem at
            // once and its status says so.
            logger.info("no adapter to read the TX power from at the start: \(error)")
            if case .name(let name)? = radioSettings.adapter { my.adapterName = name } else { my.adapterName = "" }
            my.adapterAddress = nil
        }
        let metadata = Metadata(transmitPower: radioSettings.txPower(adapter: my.adapterName.isEmpty ? nil : my.adapterName, logger: logger))
        let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                               clock: clock, schedule: radioSettings.schedule, metadata: metadata, logger: logger) { [weak self, queue] state in
            queue.async { [weak self] in
                guard let self else { return }
                self.my.radioState = state
                if let adapter = bluez.adapterInUse {
                    self.my.adapterName = adapter.name
                    self.my.adapterAddress = adapter.address
                }
                self.apply()
            }
        }
        my.subscriptions = try bluez.follow(for: agent, logger: logger)
        my.managementWatch = bluez.watchManagement(for: agent, logger: logger)
        let sleep = SleepInhibitor(connection: bus, logger: logger)
        // Off the daemon's queue: a bus without logind may take its time to say so.
        DispatchQueue.global().async { sleep.inhibit() }
        my.subscriptions.append(try sleep.follow { [logger] sleeping in
            if sleeping {
                logger.info("the system is going to sleep")
                agent.prepareForSleep { sleep.release() }
            } else {
                // Not on the bus's dispatcher thread, which the call waits on.
                DispatchQueue.global().async { sleep.inhibit() }
                agent.radioReturned()
            }
        })
        my.sleepInhibitor = sleep
        agent.start()
        return agent
    }
}

/// The mark `Daemon.perform` finds on its queue. Sendable by hand: the key is a token Dispatch
/// compares by identity only and never changes (Sendable in Swift 6.3's Dispatch, not yet in
/// Debian's 6.0.3).
private struct QueueMark: @unchecked Sendable {
    let key = DispatchSpecificKey<Bool>()
}
