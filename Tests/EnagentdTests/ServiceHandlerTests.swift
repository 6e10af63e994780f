import Dispatch
import ENAgent
import ENAPI
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import Foundation
import ENBus
import ENStore
@testable import enagentd
import ENSystemd
import TestSupport
import Testing

/// The API's handlers called one by one, without a bus: each refuses bad input with the
/// interface's named error, and a store failure is an error, never a default value.
@Suite struct ServiceHandlerTests {
    let directory = TemporaryDirectory()
    let store: AgentStore
    let service: ExposureNotificationService
    let signer: P256PrivateKey
    let log = LogCapture()

    init() throws {
        store = try AgentStore(path: directory.file("enagent.db"))
        signer = try P256PrivateKey()
        service = try Self.service(store: store, trusting: signer, log: log) { _ in }
    }

    /// A service on `store` without radio or bus, trusting key files signed by `signer`, whose
    /// callers `authorise` judges; its time is `clock`'s.
    /// A detection session ends after `idleLimit` without a call.
    static func service(store: AgentStore, trusting signer: P256PrivateKey, log: LogCapture, clock: any AgentClock = SystemClock(),
                        rssiCorrections: RssiCorrections = RssiCorrections(), idleLimit: Duration = .milliseconds(300),
                        authorise: @escaping @Sendable (DBusMessage) throws(DBusError) -> Void) throws -> ExposureNotificationService {
        let daemon = Daemon(store: store, clock: clock, retention: .protocolDefault, synchronisation: nil, radio: nil,
                            trustedKeys: [TrustedKey(publicKey: signer.publicKey)], rssiCorrections: rssiCorrections, logger: log.logger(level: .info),
                            queue: DispatchQueue(label: "test.daemon"))
        return ExposureNotificationService(daemon: daemon, sessions: DetectionSessions(bus: nil, idleLimit: idleLimit, logger: log.logger(level: .info)),
                                           authorise: authorise)
    }

    /// A signed key file, open for reading (the handler closes its descriptors as the service does).
    func keyFile(_ keys: [DiagnosisKey], batch: UInt64) throws -> FileDescriptor {
        let writer = KeyExportWriter(region: "US", startTimestamp: batch, endTimestamp: batch + 1,
                                     signer: (signer, SignatureInfo(keyId: "test", keyVersion: "1")))
        let path = directory.file("batch-\(batch).zip")
        try writer.zip(keys: keys).write(to: URL(fileURLWithPath: path))
        return FileDescriptor(open(path, O_RDONLY))
    }

    func failure(_ body: () throws -> Void) -> ExposureNotificationAPI.Failure? {
        do { try body() } catch let error as DBusError { return ExposureNotificationAPI.Failure(error) } catch { return nil }
        return nil
    }

    /// Consent given and withdrawn are journal events (MESSAGE_ID) an administrator can filter on.
    @Test func consentChangesAreJournalEvents() throws {
        _ = try service.setEnabled(SetEnabledArguments(enabled: true))
        _ = try service.setEnabled(SetEnabledArguments(enabled: true))
        _ = try service.setEnabled(SetEnabledArguments(enabled: false))
        #expect(log.records.compactMap(\.event) == [.consentGiven, .consentWithdrawn], "a change is logged once, a repeat not at all")
        #expect(log.records.allSatisfy { $0.level == .notice })
    }

    @Test func badArgumentsAreRefusedByName() {
        #expect(failure { _ = try service.pause(PauseArguments(seconds: 0)) } == .invalidArguments)
        #expect(failure { _ = try service.getTemporaryExposureKeyHistory(KeyHistoryRequest(confirmed: false)) } == .confirmationRequired)
        #expect(failure { _ = try service.addTestResult(NewTestResult(testDate: 0, method: "rumour", detail: "", verificationToken: "")) } == .invalidArguments)
        #expect(failure { _ = try service.addTestResult(NewTestResult(testDate: .max, method: "verification-code", detail: "", verificationToken: "")) }
                == .invalidArguments)
        #expect(failure { _ = try service.queueUpload(QueuedUpload(testResultId: "none", url: "http://x/", body: "{}", keys: [])) } == .invalidArguments)
        #expect(failure { _ = try service.finishUpload(UploadOutcome(testResultId: "none", outcome: .accepted)) } == .invalidArguments)
        #expect(failure { _ = try service.detectExposures(DetectionRequest(keyFiles: [], configuration: "")) } == .invalidArguments)
        #expect(failure { _ = try service.getDailySummaries(ConfigurationArgument(configuration: "{")) } == .configurationInvalid)
        #expect(failure { _ = try service.getExposureInfo(NoArguments()) } == .notAvailable, "no detection has stored a v1 configuration")
    }

    /// test_date 0 is a result whose day nobody gave: stored as unknown, listed as 0 again.
    @Test func aTestResultWithoutADateStaysWithout() throws {
        _ = try service.addTestResult(NewTestResult(testDate: 0, method: "verification-code", detail: "", verificationToken: "tok"))
        let stored = try store.testResults()
        #expect(stored.count == 1 && stored[0].testDate == nil)
        let listed = try service.getTestResults(NoArguments()).results
        #expect(listed.map(\.testDate) == [0])
    }

    @Test func aTestResultIsRecordedListedAndItsUploadQueued() throws {
        let id = try service.addTestResult(NewTestResult(testDate: 1_699_920_000, method: "verification-code", detail: "PCR", verificationToken: "tok")).id
        let results = try service.getTestResults(NoArguments()).results
        #expect(results.map(\.id) == [id] && results[0].testDate == 1_699_920_000 && results[0].verificationToken == "tok" && !results[0].uploadPending)
        #expect(failure { _ = try service.queueUpload(QueuedUpload(testResultId: id, url: "http://x/", body: "{}", keys: [[1, 2]])) } == .invalidArguments,
                "a key is 16 bytes")
        let key = Array(UInt8(0)..<16)
        _ = try service.queueUpload(QueuedUpload(testResultId: id, url: "http://keys.example/", body: "{}", keys: [key]))
        #expect(try service.getPendingUploads(NoArguments()).uploads
                == [PendingUploadRecord(testResultId: id, url: "http://keys.example/", body: "{}", attempts: 0, lastError: "", nextAttemptAt: 0)])
        _ = try service.finishUpload(UploadOutcome(testResultId: id, outcome: .retry, reason: "HTTP 503"))
        let retry = try #require(try service.getPendingUploads(NoArguments()).uploads.first)
        #expect(retry.attempts == 1 && retry.lastError == "HTTP 503" && retry.nextAttemptAt > 0)
        _ = try service.finishUpload(UploadOutcome(testResultId: id, outcome: .accepted, revisionToken: "rev-1"))
        #expect(try service.getPendingUploads(NoArguments()).uploads.isEmpty)
        let shared = try service.getTestResults(NoArguments()).results[0]
        #expect(shared.sharedAt > 0 && shared.revisionToken == "rev-1" && shared.sharedKeys == [key])
    }

    @Test func aPropertyThatCannotBeReadIsAnErrorNotAZero() throws {
        let properties = try #require(service.object().interfaces.first?.properties)
        let get = { (name: String) throws(DBusError) -> DBusValue in try properties.first { $0.name == name }!.get() }
        #expect(try get("SightingsStored") == .uint64(0))
        #expect(try get("Enabled") == .boolean(false))
        try store.close()
        for name in ["SightingsStored", "Enabled", "PausedUntil", "LastDetection"] {
            #expect(failure { _ = try get(name) } == .failed, "\(name)")
        }
        #expect(try get("Status") == .string("store-unreadable"), "the status says so itself")
    }

    // MARK: Detection sessions

    @Test func aSessionTakesBatchesAndFinishesWithOneSummary() throws {
        let exposed = try Broadcaster(), other = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60), try other.sighting(at: other.start + 600, rssi: -60)])
        let handle = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.7")
        let first = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile([exposed.key], batch: 1)]), caller: ":1.7")
        #expect(first.summary == DetectionSummary(keyFilesProcessed: 1, keysChecked: 1, matchedKeys: 1))
        var revised = exposed.key
        revised.reportType = .selfReport
        let second = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile([revised, other.key], batch: 2)]), caller: ":1.7")
        #expect(second.summary == DetectionSummary(keyFilesProcessed: 2, keysChecked: 3, matchedKeys: 2), "the revised key is the same match")
        #expect(failure { _ = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile([], batch: 3)]), caller: ":1.8") }
                == .unknownSession, "a session is its owner's alone")
        #expect(failure { _ = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.8") } == .busy)
        #expect(failure { _ = try service.detectExposures(DetectionRequest(keyFiles: [try keyFile([], batch: 4)], configuration: "")) } == .busy)
        #expect(try store.exposureWindows().isEmpty)
        let summary = try service.finishDetection(handle, caller: ":1.7").summary
        #expect(log.records.filter { $0.event == .detectionFinished }.count == 1, "one journal event for the finished detection")
        let stored = try store.exposureWindows()
        #expect(summary.matchedKeys == 2 && summary.newExposureWindows == UInt32(stored.count) && stored.count >= 2)
        #expect(failure { _ = try service.finishDetection(handle, caller: ":1.7") } == .unknownSession, "a finished session is gone")
        _ = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.8")
    }

    /// The journal is readable by groups adm and systemd-journal: a detection that matches, the
    /// reminders it brings and what became of an upload leave nothing there of a person's health.
    @Test func noHealthFactReachesTheLog() throws {
        let yesterday = ENIntervalNumber(ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue - 144)
        let exposed = try Broadcaster(start: yesterday.rawValue)
        try store.record(try (0..<10).map { try exposed.sighting(at: exposed.start + 3_600 + Int64($0) * 60, rssi: -60) })
        let handle = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.7")
        _ = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile([exposed.key], batch: 1)]), caller: ":1.7")
        let summary = try service.finishDetection(handle, caller: ":1.7").summary
        try #require(summary.matchedKeys == 1 && summary.newExposureWindows > 0)
        for outcome in [UploadOutcome.Kind.retry, .accepted, .refused] {
            let id = try service.addTestResult(NewTestResult(testDate: 0, method: "verification-code", detail: "", verificationToken: "tok")).id
            _ = try service.queueUpload(QueuedUpload(testResultId: id, url: "http://keys.example/", body: "{}", keys: [Array(UInt8(0)..<16)]))
            _ = try service.finishUpload(UploadOutcome(testResultId: id, outcome: outcome, reason: "HTTP 400 [bad_request]"))
        }
        service.daemon.queue.sync { service.daemon.checkReminders() }
        // upload-refused is due when the latest result was refused; the three share a second, so which is latest is the id's draw.
        try #require(try service.getHealthStatus(NoArguments()).reminders.contains("recent-exposure"))

        #expect(log.records.contains { $0.event == .detectionFinished && $0.message.contains("1 keys checked") }, "that it ran is logged")
        for record in log.records {
            let text = ([record.message] + record.metadata.values).joined(separator: " ").lowercased()
            for fact in ["match", "window", "exposed", "test result", "upload", "key server", "bad_request"] {
                #expect(!text.contains(fact), "the log tells \(fact): \(record.message)")
            }
        }
    }

    @Test func aSessionHonoursItsKeyBudgetAndCancelsWithoutATrace() throws {
        let handle = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 2), caller: ":1.7")
        let keys = try (0..<3).map { _ in try Broadcaster().key }
        #expect(failure { _ = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile(keys, batch: 1)]), caller: ":1.7") }
                == .limitExceeded)
        let fits = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: [try keyFile(Array(keys.prefix(2)), batch: 2)]), caller: ":1.7")
        #expect(fits.summary.keysChecked == 2, "the session goes on after a refused batch")
        #expect(failure { _ = try service.cancelDetection(handle, caller: ":1.8") } == .unknownSession)
        _ = try service.cancelDetection(handle, caller: ":1.7")
        #expect(failure { _ = try service.finishDetection(handle, caller: ":1.7") } == .unknownSession)
        #expect(try store.lastSuccessfulDetection() == nil, "a cancelled session records nothing")
        #expect(failure { _ = try service.startDetection(DetectionSessionRequest(configuration: "{", maxKeys: 0), caller: ":1.7") } == .configurationInvalid)
    }

    /// An owner that left the bus before the daemon began to watch it never holds the session.
    @Test func aSessionOfACallerAlreadyGoneEndsAtOnce() throws {
        let bus = try PrivateBus()
        let daemonConnection = try DBusConnection(address: bus.address), caller = try DBusConnection(address: bus.address)
        let gone = caller.uniqueName
        caller.close()
        let sessions = DetectionSessions(bus: daemonConnection, logger: Logger(label: "test"))
        let service = ExposureNotificationService(daemon: self.service.daemon, sessions: sessions) { _ in }
        let handle = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: gone)
        #expect(failure { _ = try service.cancelDetection(handle, caller: gone) } == .unknownSession)
        _ = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: daemonConnection.uniqueName)
    }

    @Test func anIdleSessionEndsByItself() throws {
        let handle = try service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.7")
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? service.startDetection(DetectionSessionRequest(configuration: "", maxKeys: 0), caller: ":1.9")) == nil && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(failure { _ = try service.finishDetection(handle, caller: ":1.7") } == .unknownSession, "idle for longer than 300 ms")
    }
}
