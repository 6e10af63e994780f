import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENKeyFiles
import ENSystemd
import Synchronization

/// The detection methods: DetectExposures with all its files at once, and the sessions
/// (StartDetection, AddKeyFiles, FinishDetection, CancelDetection), with what they share.
extension ExposureNotificationService {
    /// A detection session with all its files at once; runs on the detection queue.
    func detectExposures(_ request: DetectionRequest) throws(DBusError) -> DetectionReply {
        guard !request.keyFiles.isEmpty else { throw API.Failure.invalidArguments.error("give at least one key file") }
        try sessions.requireNoneOpen()
        let files = try keyFiles(request.keyFiles, firstNumber: 1)
        var session = try newSession(configuration: request.configuration, maxKeys: 0)
        try detecting { () throws(DetectionError) in try session.add(files) }
        return try finish(session)
    }

    /// Anyone who may detect may start a session: it is theirs (their bus connection's) alone.
    func startDetection(_ request: DetectionSessionRequest, caller: String) throws(DBusError) -> DetectionSessionHandle {
        DetectionSessionHandle(session: try sessions.open(try newSession(configuration: request.configuration, maxKeys: request.maxKeys),
                                                                 owner: caller))
    }

    /// Runs on the detection queue: the batch is matched on every core, its progress signalled
    /// to the session's owner at most once a second and when it is done. A refused batch leaves
    /// the session as it was.
    func addKeyFiles(_ batch: KeyFileBatch, caller: String) throws(DBusError) -> DetectionReply {
        guard !batch.keyFiles.isEmpty else { throw API.Failure.invalidArguments.error("give at least one key file") }
        var (session, cancellation) = try sessions.take(batch.session, owner: caller)
        defer { sessions.giveBack(batch.session, session) }
        let files = try keyFiles(batch.keyFiles, firstNumber: session.filesReceived + 1)
        let before = Self.summary(of: session), throttle = Throttle(interval: .seconds(1))
        let signal: @Sendable (DetectionSummary) -> Void = { [daemon] progress in
            daemon.queue.async {
                daemon.emit(API.Signals.detectionProgress, DetectionProgressArguments(session: batch.session, progress: progress), to: caller)
            }
        }
        try detecting { () throws(DetectionError) in
            try session.add(files, progress: { checked in
                guard throttle.ready() else { return }
                var progress = before
                progress.keysChecked = UInt64(checked)
                signal(progress)
            }, cancellation: cancellation)
        }
        let progress = Self.summary(of: session)
        signal(progress)
        return DetectionReply(summary: progress)
    }

    /// Runs on the detection queue: stores what the session found, as one detection.
    func finishDetection(_ handle: DetectionSessionHandle, caller: String) throws(DBusError) -> DetectionReply {
        try finish(try sessions.end(handle.session, owner: caller))
    }

    func cancelDetection(_ handle: DetectionSessionHandle, caller: String) throws(DBusError) -> NoArguments {
        try sessions.cancel(handle.session, owner: caller)
        return NoArguments()
    }

    // MARK: Detection helpers

    /// The descriptors as key files numbered from `firstNumber` in errors ("key file 3"): each is
    /// checked now (a regular file, within the limits per file and per call), and read when the
    /// session reaches it.
    private func keyFiles(_ descriptors: [FileDescriptor], firstNumber: Int) throws(DBusError) -> [KeyFileSource] {
        let limits = daemon.detection.limits
        var total = 0
        return try descriptors.enumerated().map { index, descriptor throws(DBusError) in
            let name = "key file \(firstNumber + index)", left = limits.maximumTotalSize - total
            let (limit, limitName) = left < limits.maximumFileSize
                ? (left, "the \(limits.maximumTotalSize >> 20) MiB all key files of one call may have together")
                : (limits.maximumFileSize, "the limit of \(limits.maximumFileSize >> 20) MiB per key file")
            let size = try KeyFileDescriptor.check(descriptor.rawValue, limit: limit, limitName: limitName, name: name)
            total += size
            // The size checked now is what is read (`pread`, a chunk at a time): bytes the file
            // gains meanwhile are not, and one that shrinks is refused as it is read.
            let raw = descriptor.rawValue
            return KeyFileSource(name: name) { KeyFileContents(descriptor: raw, size: size, closes: false) }
        }
    }

    private func newSession(configuration: String, maxKeys: UInt64) throws(DBusError) -> DetectionSession {
        try detecting { () throws(DetectionError) in
            try DetectionSession(detection: daemon.detection, configurationJSON: configuration, maximumKeys: maxKeys == 0 ? nil : Int(clamping: maxKeys))
        }
    }

    /// Runs a step of a detection; a refusal has been recorded as the last detection's error, so
    /// the properties that show it change.
    private func detecting<T>(_ step: () throws(DetectionError) -> T) throws(DBusError) -> T {
        do { return try step() } catch {
            daemon.queue.async { [daemon] in daemon.onChange?([.detection]) }
            throw Self.dbusError(error)
        }
    }

    /// Stores the session's findings; what changes on the daemon is posted to its queue.
    private func finish(_ session: DetectionSession) throws(DBusError) -> DetectionReply {
        let outcome = try detecting { () throws(DetectionError) in try session.finish() }
        // Only a verdict of increased risk alarms: a window below the authority's threshold does not.
        let watchers = outcome.alarms ? exposureWatchers.names : []
        let alarm = ExposureDetectedArguments(latestExposureDay: UInt64(clamping: outcome.assessment.verdict.latestIncreasedRiskDay ?? 0))
        daemon.queue.async { [daemon] in
            daemon.onChange?([.detection])
            daemon.checkReminders()
            for watcher in watchers { daemon.emit(API.Signals.exposureDetected, alarm, to: watcher) }
        }
        var summary = Self.summary(of: session)
        summary.newExposureWindows = UInt32(outcome.newWindows.count)
        // That it ran and what it checked, never what it found: the journal is readable by groups
        // adm and systemd-journal, and an exposure is for root and the group enagent only.
        sessions.logger.notice("exposure detection finished: \(summary.keyFilesProcessed) key files, \(summary.keysChecked) keys checked",
                               event: .detectionFinished)
        return DetectionReply(summary: summary)
    }

    private static func summary(of session: DetectionSession) -> DetectionSummary {
        DetectionSummary(keyFilesProcessed: UInt32(session.keyFilesProcessed), keyFilesSkipped: UInt32(session.keyFilesSkipped),
                         keysChecked: UInt64(session.keysChecked), matchedKeys: UInt32(session.matchedKeyCount))
    }

    /// The unique bus name of a call's sender: the owner of the sessions it starts.
    static func caller(_ call: DBusMessage) throws(DBusError) -> String {
        guard let sender = call.sender else { throw API.Failure.notAuthorized.error("the caller is unknown") }
        return sender
    }

    private static func dbusError(_ error: DetectionError) -> DBusError {
        switch error {
        case .badConfiguration: return API.Failure.configurationInvalid.error(error.description)
        case .badKeyFile, .unverified, .unreadable: return API.Failure.keyFileRejected.error(error.description)
        case .keyLimit: return API.Failure.limitExceeded.error(error.description)
        case .cancelled: return API.Failure.unknownSession.error(error.description)
        case .store: return API.Failure.failed.error(error.description)
        }
    }
}

/// Says yes at most once per `interval` (the first time at once).
private final class Throttle: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(interval: Duration) { self.interval = interval }

    func ready() -> Bool {
        last.withLock { last in
            let now = ContinuousClock.now
            if let last, now - last < interval { return false }
            last = now
            return true
        }
    }
}
