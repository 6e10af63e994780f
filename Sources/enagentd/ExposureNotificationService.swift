import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENCore
import ENStore
import FoundationEssentials
import Glibc
import ENSystemd

/// enagentd's side of the contract in ENAPI: one named handler per method (the table in
/// `object()`), each callable alone. Anyone may read the properties, which tell nothing of exposure
/// or diagnosis; changing state, retrieving keys, detecting and what tells exposure or diagnosis
/// (GetHealthStatus, ExposureDetected through WatchExposures) take root, the daemon's own user or a
/// member of the group `enagent` (the bus policy says the same).
struct ExposureNotificationService: Sendable {
    typealias API = ExposureNotificationAPI

    let daemon: Daemon
    /// Refuses a caller who may not change state, with NotAuthorized.
    private let authorise: @Sendable (DBusMessage) throws(DBusError) -> Void
    /// Detections and session batches run one at a time, off the daemon's queue: the properties
    /// stay readable meanwhile.
    private let detectionQueue = DispatchQueue(label: "enagent.detection")
    /// The privileged methods run here, off the connection's thread: judging a caller waits for
    /// the bus to say who it is, and the connection answers other calls meanwhile.
    private let controlQueue = DispatchQueue(label: "enagent.control")
    let sessions: DetectionSessions
    let exposureWatchers: ExposureWatchers

    /// Callers are checked with the bus daemon (their uid) and the group database; a session ends
    /// when its owner leaves `bus`.
    init(daemon: Daemon, bus: DBusConnection, logger: Logger) {
        self.init(daemon: daemon, sessions: DetectionSessions(bus: bus, logger: logger), exposureWatchers: ExposureWatchers(bus: bus, logger: logger)) {
            call throws(DBusError) in try Self.authorise(call, on: bus)
        }
    }

    init(daemon: Daemon, sessions: DetectionSessions, exposureWatchers: ExposureWatchers? = nil,
         authorise: @escaping @Sendable (DBusMessage) throws(DBusError) -> Void) {
        self.daemon = daemon
        self.sessions = sessions
        self.exposureWatchers = exposureWatchers ?? ExposureWatchers(bus: nil, logger: sessions.logger)
        self.authorise = authorise
    }

    /// The exported object: the contract's methods with their handlers, its properties (`properties`).
    func object() -> ExportedObject {
        typealias M = API.Methods
        // Privileged callers only, on the control queue, unless a row says otherwise.
        let methods: [DBusMethod] = [
            method(M.setEnabled, setEnabled),
            method(M.pause, pause),
            method(M.resume, resume),
            method(M.getTemporaryExposureKeyHistory, getTemporaryExposureKeyHistory),
            method(M.detectExposures, on: .detection, detectExposures),
            method(M.startDetection, withCaller: startDetection),
            method(M.addKeyFiles, for: .sessionOwner, on: .detection, withCaller: addKeyFiles),
            method(M.finishDetection, for: .sessionOwner, on: .detection, withCaller: finishDetection),
            // Not on the detection queue: it stops a batch that runs there.
            method(M.cancelDetection, for: .sessionOwner, on: .connectionThread, withCaller: cancelDetection),
            method(M.getExposureWindows, getExposureWindows),
            method(M.getDailySummaries, getDailySummaries),
            method(M.getExposureInfo, getExposureInfo),
            method(M.addTestResult, addTestResult),
            method(M.getTestResults, getTestResults),
            method(M.setVerificationToken, setVerificationToken),
            method(M.queueUpload, queueUpload),
            method(M.getPendingUploads, getPendingUploads),
            method(M.finishUpload, finishUpload),
            method(M.resetData, resetData),
            method(M.getHealthStatus, getHealthStatus),
            method(M.watchExposures, withCaller: watchExposures),
            method(M.getSightingsPerHour, getSightingsPerHour),
        ]
        return ExportedObject(path: API.path, interfaces: [
            DBusInterface(API.interface, methods: methods, properties: Self.properties.map { $0.served(self) }, signals: API.Signals.declarations),
        ])
    }

    // MARK: Handlers, one per method

    func setEnabled(_ arguments: SetEnabledArguments) throws(DBusError) -> NoArguments {
        try onDaemonQueue { try daemon.setEnabled(arguments.enabled) }
        return NoArguments()
    }

    func pause(_ arguments: PauseArguments) throws(DBusError) -> NoArguments {
        // Longer than PauseArguments.longestSeconds is that long (Daemon.pause, which logs it); PausedUntil tells the caller.
        guard arguments.seconds > 0 else { throw API.Failure.invalidArguments.error("pause for at least one second") }
        try onDaemonQueue { try daemon.pause(seconds: arguments.seconds) }
        return NoArguments()
    }

    func resume(_: NoArguments) throws(DBusError) -> NoArguments {
        try onDaemonQueue { try daemon.resume() }
        return NoArguments()
    }

    func getTemporaryExposureKeyHistory(_ request: KeyHistoryRequest) throws(DBusError) -> KeyHistory {
        guard request.confirmed else {
            throw API.Failure.confirmationRequired.error("sharing keys needs the person's confirmation for every request; pass true once they agreed")
        }
        return KeyHistory(keys: try onDaemonQueue { try daemon.releasableKeys() })
    }

    func getExposureWindows(_: NoArguments) throws(DBusError) -> ExposureWindows {
        ExposureWindows(windows: try reading { try daemon.store.exposureWindows() }.map(ExposureWindowRecord.init))
    }

    func getDailySummaries(_ arguments: ConfigurationArgument) throws(DBusError) -> DailySummaries {
        let configuration = try Self.configuration(arguments.configuration)
        let windows = try reading { try daemon.store.exposureWindows() }
        return DailySummaries(summaries: configuration.v2.dailySummaries(of: windows, now: daemon.clock.now))
    }

    func getExposureInfo(_: NoArguments) throws(DBusError) -> ExposureInfos {
        let stored = try reading { try daemon.store.value(StoreSettings.exposureConfiguration) }
        guard let v1 = try Self.configuration(stored ?? "").v1 else {
            throw API.Failure.notAvailable.error("the last detection had no v1 configuration (minimumRiskScore and its level values)")
        }
        // Google's v1 (KeyExposureEvaluator.findExposures) on what the detections kept of each
        // matched key, as enctl detect offline scores its matches; days count to now.
        let matches = try reading { try daemon.store.v1Matches() }
        return ExposureInfos(exposures: v1.exposureInfos(of: matches, now: daemon.clock.now))
    }

    func addTestResult(_ arguments: NewTestResult) throws(DBusError) -> TestResultID {
        guard VerificationMethod(rawValue: arguments.method) != nil else {
            throw API.Failure.invalidArguments.error("the method is one of \(VerificationMethod.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let testDate = Int64(exactly: arguments.testDate) else { throw API.Failure.invalidArguments.error("test_date \(arguments.testDate) is out of range") }
        // test_date 0: the day is unknown, as the contract's other times say "none" with 0.
        let result = TestResult(id: UUID().uuidString.lowercased(), testDate: testDate == 0 ? nil : testDate, verificationMethod: arguments.method,
                                verificationDetail: arguments.detail.isEmpty ? nil : arguments.detail, recordedAt: daemon.clock.now,
                                verificationToken: arguments.verificationToken.isEmpty ? nil : arguments.verificationToken)
        try onDaemonQueue { try daemon.store.recordTestResult(result) }
        return TestResultID(id: result.id)
    }

    func getTestResults(_: NoArguments) throws(DBusError) -> TestResults {
        TestResults(results: try reading { try daemon.store.testResults() }.map {
            TestResultRecord(id: $0.id, testDate: UInt64(max(0, $0.testDate ?? 0)), method: $0.verificationMethod, detail: $0.verificationDetail ?? "",
                             recordedAt: UInt64(max(0, $0.recordedAt)), sharedAt: UInt64(max(0, $0.sharedAt ?? 0)), uploadPending: $0.uploadPending,
                             verificationToken: $0.verificationToken ?? "", uploadFailure: $0.uploadFailure ?? "", revisionToken: $0.revisionToken ?? "",
                             sharedKeys: $0.sharedKeys.map(\.bytes))
        })
    }

    func setVerificationToken(_ update: VerificationTokenUpdate) throws(DBusError) -> NoArguments {
        try onDaemonQueue {
            guard try daemon.store.setVerificationToken(update.verificationToken.isEmpty ? nil : update.verificationToken,
                                                        testResultId: update.testResultId) else {
                throw API.Failure.invalidArguments.error("no test result \(update.testResultId)")
            }
        }
        return NoArguments()
    }

    func queueUpload(_ upload: QueuedUpload) throws(DBusError) -> NoArguments {
        let keys = upload.keys.compactMap { Bytes16(bytes: $0) }
        guard keys.count == upload.keys.count else { throw API.Failure.invalidArguments.error("every key_data must be 16 bytes") }
        try onDaemonQueue {
            guard try daemon.store.testResults().contains(where: { $0.id == upload.testResultId }) else {
                throw API.Failure.invalidArguments.error("no test result \(upload.testResultId)")
            }
            try daemon.store.queueUpload(testResultId: upload.testResultId, url: upload.url, body: upload.body, keys: keys, at: daemon.clock.now)
        }
        return NoArguments()
    }

    func getPendingUploads(_: NoArguments) throws(DBusError) -> PendingUploadList {
        PendingUploadList(uploads: try reading { try daemon.store.pendingUploads() }.map {
            PendingUploadRecord(testResultId: $0.testResultId, url: $0.url, body: $0.body, attempts: UInt32(clamping: $0.attempts),
                                lastError: $0.lastError ?? "", nextAttemptAt: UInt64(max(0, $0.nextAttemptAt)))
        })
    }

    func finishUpload(_ outcome: UploadOutcome) throws(DBusError) -> NoArguments {
        guard let kind = UploadOutcome.Kind(rawValue: outcome.outcome) else {
            throw API.Failure.invalidArguments.error("outcome is one of \(UploadOutcome.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        try onDaemonQueue {
            guard let upload = try daemon.store.pendingUploads().first(where: { $0.testResultId == outcome.testResultId }) else {
                throw API.Failure.invalidArguments.error("no pending upload for test result \(outcome.testResultId)")
            }
            let now = daemon.clock.now
            let result: UploadResult
            switch kind {
            case .accepted:
                result = .accepted(revisionToken: outcome.revisionToken.isEmpty ? nil : outcome.revisionToken,
                                   note: outcome.reason.isEmpty ? nil : outcome.reason)
            case .retry:
                result = .retry(reason: outcome.reason, at: UploadBackoff.nextAttempt(now: now, failures: upload.attempts + 1,
                                                                                     retryAfter: Int64(clamping: outcome.retryAfter)))
            case .refused: result = .refused(reason: outcome.reason)
            }
            try daemon.uploadFinished(testResultId: outcome.testResultId, result)
        }
        return NoArguments()
    }

    func resetData(_: NoArguments) throws(DBusError) -> NoArguments {
        try onDaemonQueue { try daemon.resetData() }
        return NoArguments()
    }

    func getHealthStatus(_: NoArguments) throws(DBusError) -> HealthStatus {
        try onDaemonQueue {
            let assessment = try daemon.store.latestRiskAssessment()
            return HealthStatus(verdict: assessment?.verdict, model: assessment?.model.rawValue ?? "", assessedAt: assessment?.assessedAt ?? 0,
                                reminders: daemon.reminders.map(\.rawValue))
        }
    }

    func watchExposures(_: NoArguments, caller: String) throws(DBusError) -> NoArguments {
        try exposureWatchers.add(caller)
        return NoArguments()
    }

    func getSightingsPerHour(_ request: SightingsPerHourRequest) throws(DBusError) -> SightingsPerHour {
        let since = Int64(clamping: request.since)
        return SightingsPerHour(hours: try reading { try daemon.store.sightingsPerHour(since: since) }.map {
            SightingHourRecord(hourStart: UInt64(max(0, $0.start)), sightings: UInt32(clamping: $0.sightings),
                               distinctIdentifiers: UInt32(clamping: $0.distinctIdentifiers))
        })
    }

    // MARK: Helpers

    /// Who may call a method.
    private enum Callers {
        /// Root, the daemon's user and the group enagent (`authorise`).
        case privileged
        /// Anyone: the methods of a session, which is its owner's alone (the handler checks the
        /// caller; only a privileged caller can start one).
        case sessionOwner
    }

    /// Where a method's handler runs.
    private enum Place {
        /// Off the connection's thread, which answers other calls while a caller is judged.
        case control
        /// With the detections, one at a time.
        case detection
        /// On the connection's own thread: only what never waits.
        case connectionThread
    }

    /// A row of the method table: `contract` answered by `handler`, told who called, for `callers`, at `place`.
    private func method<Input, Output>(_ contract: MethodContract<Input, Output>, for callers: Callers = .privileged, on place: Place = .control,
                                       withCaller handler: @escaping @Sendable (Input, _ caller: String) throws(DBusError) -> Output) -> DBusMethod {
        let queue = switch place {
        case .control: controlQueue
        case .detection: detectionQueue
        case .connectionThread: DispatchQueue?.none
        }
        return DBusMethod(contract, queue: queue, invalid: API.Failure.invalidArguments.error) { [authorise] call, input throws(DBusError) in
            if callers == .privileged { try authorise(call) }
            return try handler(input, try Self.caller(call))
        }
    }

    /// A row whose handler does not ask who called.
    private func method<Input, Output>(_ contract: MethodContract<Input, Output>, for callers: Callers = .privileged, on place: Place = .control,
                                       _ handler: @escaping @Sendable (Input) throws(DBusError) -> Output) -> DBusMethod {
        method(contract, for: callers, on: place, withCaller: { input, _ throws(DBusError) in try handler(input) })
    }

    /// Runs `body` on the daemon's queue, where its state lives; an error that is not already the
    /// API's becomes Failed with its text.
    func onDaemonQueue<T>(_ body: () throws -> T) throws(DBusError) -> T {
        do { return try daemon.perform(body) } catch let error as DBusError { throw error } catch {
            throw API.Failure.failed.error("\(error)")
        }
    }

    /// The properties, a row each: the field of `AgentProperties` that declares it (its contract:
    /// name and type), the daemon's facts whose change announces it, and its getter. The
    /// object serves them in this order (the interface's), and the daemon announces those whose
    /// rows name a fact it changed (`names(changedWith:)`); the rest it never announces.
    static let properties: [ServedProperty] = [
        ServedProperty(\.$enabled, changesWith: [.status]) { service in try service.onDaemonQueue { try service.daemon.enabled } },
        ServedProperty(\.$status, changesWith: [.status, .radio]) { service in try service.onDaemonQueue { service.daemon.status.rawValue } },
        ServedProperty(\.$pausedUntil, changesWith: [.status]) { service in UInt64(try service.onDaemonQueue { try service.daemon.pausedUntil }) },
        ServedProperty(\.$adapter, changesWith: [.radio]) { service in try service.onDaemonQueue { service.daemon.adapterName } },
        ServedProperty(\.$advertising, changesWith: [.radio]) { service in try service.onDaemonQueue { service.daemon.radioState.advertising } },
        ServedProperty(\.$scanning, changesWith: [.radio]) { service in try service.onDaemonQueue { service.daemon.radioState.scanning } },
        ServedProperty(\.$lastDetection, changesWith: [.detection]) { service in UInt64(try service.reading { try service.daemon.store.lastSuccessfulDetection() } ?? 0) },
        ServedProperty(\.$lastDetectionError, changesWith: [.detection]) { service in try service.reading { try service.daemon.store.lastDetection() }?.error ?? "" },
        ServedProperty(\.$sightingsStored, changesWith: [.sightings]) { service in UInt64(try service.reading { try service.daemon.store.sightingCount() }) },
        ServedProperty(\.$reminders, changesWith: [.reminders]) { service in try service.onDaemonQueue { service.daemon.reminders.filter { !$0.revealsHealth }.map(\.rawValue) } },
        ServedProperty(\.$version, changesWith: []) { _ in API.packageVersion },
        ServedProperty(\.$rssiCorrection, changesWith: []) { service in Int32(service.daemon.detection.rssiCorrections.defaultCorrection) },
        // The adapter in use heads the list.
        ServedProperty(\.$adapterRssiCorrections, changesWith: [.radio]) { service in try service.onDaemonQueue { service.daemon.adapterRssiCorrections } },
    ]

    /// The names of the properties whose rows name one of `facts`.
    static func names(changedWith facts: Set<DaemonFact>) -> [String] {
        properties.filter { !$0.changesWith.isDisjoint(with: facts) }.map(\.name)
    }

    /// A read of the store, which may run on any thread: a failure is an error reply, never a default.
    func reading<T>(_ body: () throws -> T) throws(DBusError) -> T {
        do { return try body() } catch { throw API.Failure.failed.error("cannot read the agent's database: \(error)") }
    }

    /// Refuses callers who are neither root, nor the daemon's user, nor in the group `enagent`.
    /// Waits for the bus to answer with the caller's uid: on the control queue, never on the
    /// connection's own thread, which would answer nothing else meanwhile.
    private static func authorise(_ call: DBusMessage, on bus: DBusConnection) throws(DBusError) {
        guard let sender = call.sender else { throw API.Failure.notAuthorized.error("the caller is unknown") }
        let uid = try bus.callBus("GetConnectionUnixUser", [.string(sender)]).first?.integer
        guard let uid, CallerAuthorisation.mayControl(uid: uid_t(uid), group: API.privilegedGroup) else {
            throw API.Failure.notAuthorized.error("only root and members of the group \(API.privilegedGroup) may do this; ask an administrator to add you")
        }
    }

    private static func configuration(_ json: String) throws(DBusError) -> ExposureConfiguration {
        do { return try ExposureDetection.configuration(json) } catch { throw API.Failure.configurationInvalid.error(error.description) }
    }
}

/// What the daemon knows that its D-Bus properties show: a change of one announces each property
/// whose row names it (`ExposureNotificationService.properties`).
enum DaemonFact: Sendable, CaseIterable {
    /// Consent, a pause, the clock's trust, the store's readability: the status beside the radio.
    case status
    /// What the radio does and on which adapter.
    case radio
    /// The last detection: when it succeeded, or why it failed.
    case detection
    /// The sightings stored.
    case sightings
    /// The reminders due that tell nothing of health.
    case reminders
}

/// One D-Bus property as the service serves it: a row of `ExposureNotificationService.properties`.
struct ServedProperty: Sendable {
    let name: String
    let changesWith: Set<DaemonFact>
    /// The property on `service`, whose getter's failure is an error reply (Failed), never a default value.
    let served: @Sendable (ExposureNotificationService) -> DBusProperty

    init<Value>(_ property: KeyPath<AgentProperties, BusProperty<Value>>, changesWith facts: Set<DaemonFact>,
                _ get: @escaping @Sendable (ExposureNotificationService) throws -> Value) {
        let name = AgentProperties()[keyPath: property].name
        self.name = name
        changesWith = facts
        served = { service in
            DBusProperty(name, Value.dbusSignature) { () throws(DBusError) in
                do { return try get(service).dbusValue } catch let error as DBusError { throw error } catch {
                    throw ExposureNotificationAPI.Failure.failed.error("\(error)")
                }
            }
        }
    }
}
