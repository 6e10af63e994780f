import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENStore
@testable import enagentd
import Logging
import TestSupport
import Testing

/// The API's handlers called one by one, without a bus: each refuses bad input with the
/// interface's named error, and a store failure is an error, never a default value.
@Suite struct ServiceHandlerTests {
    let directory = TemporaryDirectory()
    let store: AgentStore
    let service: ExposureNotificationService

    init() throws {
        store = try AgentStore(path: directory.file("enagent.db"))
        let settings = try RadioSettings(options: RadioOptions.parse(["--no-radio"]), file: AgentConfiguration())
        let daemon = Daemon(store: store, clock: SystemClock(), retention: .protocolDefault, synchronisation: nil, radioSettings: settings,
                            bus: nil, trustedKeys: [], logger: Logger(label: "test"), queue: DispatchQueue(label: "test.daemon"))
        service = ExposureNotificationService(daemon: daemon) { _ in }
    }

    func failure(_ body: () throws -> Void) -> ExposureNotificationAPI.Failure? {
        do { try body() } catch let error as DBusError { return ExposureNotificationAPI.Failure(error) } catch { return nil }
        return nil
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
        for name in ["SightingsStored", "Enabled", "PausedUntil", "LastDetection", "LatestExposureDay"] {
            #expect(failure { _ = try get(name) } == .failed, "\(name)")
        }
        #expect(try get("Status") == .string("store-unreadable"), "the status says so itself")
    }
}
