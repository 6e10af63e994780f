import ENBus
import ENCore

/// The contract between enagentd and its clients: `org.enagent.ExposureNotification1`, on the
/// object of the same path (dbus/org.enagent.ExposureNotification1.md documents it). enagentd
/// serves exactly these methods, properties and signal, and enctl calls them; a field added here
/// reaches both.
public enum ExposureNotificationAPI {
    /// The package's version: enagentd's Version property, both programs' --version; debian/changelog
    /// must be at it (make deb checks).
    public static let packageVersion = "0.6.0"
    public static let busName = "org.enagent.ExposureNotification1"
    public static let path = "/org/enagent/ExposureNotification1"
    public static let interface = "org.enagent.ExposureNotification1"
    /// Besides root and the daemon's user, the members of this group may change state, read keys
    /// and detect (the bus policy says the same).
    public static let privilegedGroup = "enagent"

    public enum Methods {
        public static let setEnabled = MethodContract("SetEnabled", SetEnabledArguments.self)
        public static let pause = MethodContract("Pause", PauseArguments.self)
        public static let resume = MethodContract("Resume")
        public static let getTemporaryExposureKeyHistory = MethodContract("GetTemporaryExposureKeyHistory", KeyHistoryRequest.self, KeyHistory.self)
        public static let detectExposures = MethodContract("DetectExposures", DetectionRequest.self, DetectionReply.self)
        public static let startDetection = MethodContract("StartDetection", DetectionSessionRequest.self, DetectionSessionHandle.self)
        public static let addKeyFiles = MethodContract("AddKeyFiles", KeyFileBatch.self, DetectionReply.self)
        public static let finishDetection = MethodContract("FinishDetection", DetectionSessionHandle.self, DetectionReply.self)
        public static let cancelDetection = MethodContract("CancelDetection", DetectionSessionHandle.self)
        public static let getExposureWindows = MethodContract("GetExposureWindows", NoArguments.self, ExposureWindows.self)
        public static let getDailySummaries = MethodContract("GetDailySummaries", ConfigurationArgument.self, DailySummaries.self)
        public static let getExposureInfo = MethodContract("GetExposureInfo", NoArguments.self, ExposureInfos.self)
        public static let addTestResult = MethodContract("AddTestResult", NewTestResult.self, TestResultID.self)
        public static let getTestResults = MethodContract("GetTestResults", NoArguments.self, TestResults.self)
        public static let setVerificationToken = MethodContract("SetVerificationToken", VerificationTokenUpdate.self)
        public static let queueUpload = MethodContract("QueueUpload", QueuedUpload.self)
        public static let getPendingUploads = MethodContract("GetPendingUploads", NoArguments.self, PendingUploadList.self)
        public static let finishUpload = MethodContract("FinishUpload", UploadOutcome.self)
        public static let resetData = MethodContract("ResetData")
        /// What tells exposure or diagnosis, which the properties that anyone may read leave out.
        public static let getHealthStatus = MethodContract("GetHealthStatus", NoArguments.self, HealthStatus.self)
        /// Sends the caller ExposureDetected from now until it leaves the bus.
        public static let watchExposures = MethodContract("WatchExposures")
        /// Counts only, aggregated in the daemon; privileged all the same, since they tell when people were near.
        public static let getSightingsPerHour = MethodContract("GetSightingsPerHour", SightingsPerHourRequest.self, SightingsPerHour.self)

        /// Every method, in the interface's order.
        public static let all: [any MethodDeclaration] = [
            setEnabled, pause, resume, getTemporaryExposureKeyHistory, detectExposures, startDetection, addKeyFiles, finishDetection, cancelDetection,
            getExposureWindows, getDailySummaries, getExposureInfo,
            addTestResult, getTestResults, setVerificationToken, queueUpload, getPendingUploads, finishUpload, resetData, getHealthStatus, watchExposures,
            getSightingsPerHour,
        ]
    }

    public enum Properties {
        public static let enabled = PropertyContract("Enabled", Bool.self)
        /// One of AgentStatus's raw values: active, paused, disabled, consent-required, …
        public static let status = PropertyContract("Status", String.self)
        /// Unix seconds; 0 when not paused.
        public static let pausedUntil = PropertyContract("PausedUntil", UInt64.self)
        public static let adapter = PropertyContract("Adapter", String.self)
        public static let advertising = PropertyContract("Advertising", Bool.self)
        public static let scanning = PropertyContract("Scanning", Bool.self)
        /// Unix seconds of the last successful detection; 0 for never.
        public static let lastDetection = PropertyContract("LastDetection", UInt64.self)
        /// The last detection's error; "" when it succeeded.
        public static let lastDetectionError = PropertyContract("LastDetectionError", String.self)
        public static let sightingsStored = PropertyContract("SightingsStored", UInt64.self)
        /// The reminders due that tell nothing of exposure or diagnosis (GetHealthStatus has them all).
        public static let reminders = PropertyContract("Reminders", [String].self)
        public static let version = PropertyContract("Version", String.self)
        /// dB the daemon's detection adds to every RSSI of an adapter the configuration does not
        /// name (enagent.conf's rssi-correction).
        public static let rssiCorrection = PropertyContract("RssiCorrection", Int32.self)
        /// The adapter in use and every adapter the configuration names (rssi-correction.ADDRESS),
        /// each with the correction its sightings get.
        public static let adapterRssiCorrections = PropertyContract("AdapterRssiCorrections", [AdapterRssiCorrection].self)
    }

    public enum Signals {
        /// To the callers of WatchExposures only, never broadcast: a broadcast reaches every
        /// listener on the bus, and that a detection found an exposure is itself health data.
        public static let exposureDetected = SignalContract("ExposureDetected", ExposureDetectedArguments.self)
        /// To the session's owner only, at most once a second while it matches and after every batch.
        public static let detectionProgress = SignalContract("DetectionProgress", DetectionProgressArguments.self)

        /// Every signal, in the interface's order.
        public static let declarations = [exposureDetected.declaration, detectionProgress.declaration]
    }

    /// The interface's named errors, `org.enagent.ExposureNotification1.Error.*`.
    public enum Failure: String, Sendable, CaseIterable {
        case notAuthorized = "NotAuthorized"
        case confirmationRequired = "ConfirmationRequired"
        case invalidArguments = "InvalidArguments"
        case keyFileRejected = "KeyFileRejected"
        case configurationInvalid = "ConfigurationInvalid"
        case notAvailable = "NotAvailable"
        /// Another detection session is open; try again when it ends.
        case busy = "Busy"
        /// A batch would take the session past its maximum key count.
        case limitExceeded = "LimitExceeded"
        /// No such session of this caller: it ended, was idle too long, or is another caller's.
        case unknownSession = "UnknownSession"
        case failed = "Failed"

        public var name: String { "\(interface).Error.\(rawValue)" }

        public func error(_ message: String) -> DBusError { DBusError(name: name, message: message) }

        /// The failure an error reply names, if it is one of the interface's.
        public init?(_ error: DBusError) {
            guard error.name.hasPrefix(interface + ".Error.") else { return nil }
            self.init(rawValue: String(error.name.dropFirst(interface.count + ".Error.".count)))
        }
    }
}

/// How a positive test was verified: AddTestResult's `method` and GetTestResults' values.
public enum VerificationMethod: String, Sendable, CaseIterable {
    case smartHealthCard = "smart-health-card"
    case verificationCode = "verification-code"
}

// MARK: Method arguments and replies

public struct SetEnabledArguments: DBusRecord, Equatable {
    public static let members = [DBusArgument("enabled", Bool.self)]
    public var enabled: Bool
    public init(enabled: Bool) { self.enabled = enabled }
    public var values: [DBusValue] { [enabled.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { enabled = try reader.next() }
}

public struct PauseArguments: DBusRecord, Equatable {
    /// The longest pause: enagentd takes a longer one as this long, and enctl refuses it.
    public static let longestSeconds: UInt64 = 366 * 86_400
    public static let members = [DBusArgument("seconds", UInt64.self)]
    public var seconds: UInt64
    public init(seconds: UInt64) { self.seconds = seconds }
    public var values: [DBusValue] { [seconds.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { seconds = try reader.next() }
}

/// Keys are released only with the person's confirmation, given anew for every request.
public struct KeyHistoryRequest: DBusRecord, Equatable {
    public static let members = [DBusArgument("confirmed", Bool.self)]
    public var confirmed: Bool
    public init(confirmed: Bool) { self.confirmed = confirmed }
    public var values: [DBusValue] { [confirmed.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { confirmed = try reader.next() }
}

public struct KeyHistory: DBusRecord, Equatable {
    public static let members = [DBusArgument("keys", [TemporaryExposureKey].self)]
    public var keys: [TemporaryExposureKey]
    public init(keys: [TemporaryExposureKey]) { self.keys = keys }
    public var values: [DBusValue] { [keys.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { keys = try reader.next() }
}

public struct DetectionRequest: DBusRecord, Equatable {
    public static let members = [DBusArgument("key_files", [FileDescriptor].self), DBusArgument("configuration", String.self)]
    /// Export zips, open for reading; the daemon closes its copies.
    public var keyFiles: [FileDescriptor]
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration: String
    public init(keyFiles: [FileDescriptor], configuration: String) {
        self.keyFiles = keyFiles
        self.configuration = configuration
    }
    public var values: [DBusValue] { [keyFiles.dbusValue, configuration.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        keyFiles = try reader.next()
        configuration = try reader.next()
    }
}

public struct DetectionReply: DBusRecord, Equatable {
    public static let members = [DBusArgument("summary", DetectionSummary.self)]
    public var summary: DetectionSummary
    public init(summary: DetectionSummary) { self.summary = summary }
    public var values: [DBusValue] { [summary.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { summary = try reader.next() }
}

public struct DetectionSessionRequest: DBusRecord, Equatable {
    public static let members = [DBusArgument("configuration", String.self), DBusArgument("max_keys", UInt64.self)]
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration: String
    /// The most keys the session may check; 0 for no limit.
    public var maxKeys: UInt64
    public init(configuration: String, maxKeys: UInt64) {
        self.configuration = configuration
        self.maxKeys = maxKeys
    }
    public var values: [DBusValue] { [configuration.dbusValue, maxKeys.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        configuration = try reader.next()
        maxKeys = try reader.next()
    }
}

/// A detection session, named by StartDetection; only the caller that started it may use it.
public struct DetectionSessionHandle: DBusRecord, Equatable {
    public static let members = [DBusArgument("session", String.self)]
    public var session: String
    public init(session: String) { self.session = session }
    public var values: [DBusValue] { [session.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { session = try reader.next() }
}

public struct KeyFileBatch: DBusRecord, Equatable {
    public static let members = [DBusArgument("session", String.self), DBusArgument("key_files", [FileDescriptor].self)]
    public var session: String
    /// Export zips, open for reading; the daemon closes its copies.
    public var keyFiles: [FileDescriptor]
    public init(session: String, keyFiles: [FileDescriptor]) {
        self.session = session
        self.keyFiles = keyFiles
    }
    public var values: [DBusValue] { [session.dbusValue, keyFiles.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        session = try reader.next()
        keyFiles = try reader.next()
    }
}

public struct DetectionProgressArguments: DBusRecord, Equatable {
    public static let members = [DBusArgument("session", String.self), DBusArgument("progress", DetectionSummary.self)]
    public var session: String
    /// The session so far; NewExposureWindows stays 0 until FinishDetection.
    public var progress: DetectionSummary
    public init(session: String, progress: DetectionSummary) {
        self.session = session
        self.progress = progress
    }
    public var values: [DBusValue] { [session.dbusValue, progress.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        session = try reader.next()
        progress = try reader.next()
    }
}

/// What one DetectExposures call or detection session did, as an `a{sv}` so that clients can ignore entries they do
/// not know. Sums of several calls add up field by field.
public struct DetectionSummary: DBusRepresentable, Equatable, Encodable {
    public var keyFilesProcessed: UInt32 = 0
    public var keyFilesSkipped: UInt32 = 0
    public var keysChecked: UInt64 = 0
    public var matchedKeys: UInt32 = 0
    public var newExposureWindows: UInt32 = 0

    public init(keyFilesProcessed: UInt32 = 0, keyFilesSkipped: UInt32 = 0, keysChecked: UInt64 = 0, matchedKeys: UInt32 = 0, newExposureWindows: UInt32 = 0) {
        (self.keyFilesProcessed, self.keyFilesSkipped, self.keysChecked) = (keyFilesProcessed, keyFilesSkipped, keysChecked)
        (self.matchedKeys, self.newExposureWindows) = (matchedKeys, newExposureWindows)
    }

    private enum CodingKeys: String, CodingKey {
        case keyFilesProcessed = "KeyFilesProcessed", keyFilesSkipped = "KeyFilesSkipped", keysChecked = "KeysChecked"
        case matchedKeys = "MatchedKeys", newExposureWindows = "NewExposureWindows"
    }

    public static let dbusSignature = "a{sv}"

    public var dbusValue: DBusValue {
        .properties([
            CodingKeys.keyFilesProcessed.rawValue: keyFilesProcessed.dbusValue, CodingKeys.keyFilesSkipped.rawValue: keyFilesSkipped.dbusValue,
            CodingKeys.keysChecked.rawValue: keysChecked.dbusValue, CodingKeys.matchedKeys.rawValue: matchedKeys.dbusValue,
            CodingKeys.newExposureWindows.rawValue: newExposureWindows.dbusValue,
        ])
    }

    public init(dbusValue: DBusValue) throws(ContractMismatch) {
        guard dbusValue.unwrapped.signature == Self.dbusSignature, let entries = dbusValue.stringKeyed else { throw Self.mismatch(dbusValue) }
        func entry<Value: DBusRepresentable>(_ key: CodingKeys) throws(ContractMismatch) -> Value {
            guard let value = entries[key.rawValue] else { throw ContractMismatch("\(key.rawValue) is missing") }
            do { return try Value(dbusValue: value) } catch { throw error.within(key.rawValue) }
        }
        keyFilesProcessed = try entry(.keyFilesProcessed)
        keyFilesSkipped = try entry(.keyFilesSkipped)
        keysChecked = try entry(.keysChecked)
        matchedKeys = try entry(.matchedKeys)
        newExposureWindows = try entry(.newExposureWindows)
    }

    public static func + (left: Self, right: Self) -> Self {
        Self(keyFilesProcessed: left.keyFilesProcessed + right.keyFilesProcessed, keyFilesSkipped: left.keyFilesSkipped + right.keyFilesSkipped,
             keysChecked: left.keysChecked + right.keysChecked, matchedKeys: left.matchedKeys + right.matchedKeys,
             newExposureWindows: left.newExposureWindows + right.newExposureWindows)
    }
}

public struct ExposureWindows: DBusRecord, Equatable {
    public static let members = [DBusArgument("windows", [ExposureWindowRecord].self)]
    public var windows: [ExposureWindowRecord]
    public init(windows: [ExposureWindowRecord]) { self.windows = windows }
    public var values: [DBusValue] { [windows.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { windows = try reader.next() }
}

public struct ConfigurationArgument: DBusRecord, Equatable {
    public static let members = [DBusArgument("configuration", String.self)]
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration: String
    public init(configuration: String) { self.configuration = configuration }
    public var values: [DBusValue] { [configuration.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { configuration = try reader.next() }
}

public struct DailySummaries: DBusRecord, Equatable {
    public static let members = [DBusArgument("summaries", [DailySummary].self)]
    public var summaries: [DailySummary]
    public init(summaries: [DailySummary]) { self.summaries = summaries }
    public var values: [DBusValue] { [summaries.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { summaries = try reader.next() }
}

public struct ExposureInfos: DBusRecord, Equatable {
    public static let members = [DBusArgument("exposures", [ExposureInfo].self)]
    public var exposures: [ExposureInfo]
    public init(exposures: [ExposureInfo]) { self.exposures = exposures }
    public var values: [DBusValue] { [exposures.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { exposures = try reader.next() }
}

public struct NewTestResult: DBusRecord, Equatable {
    public static let members = [DBusArgument("test_date", UInt64.self), DBusArgument("method", String.self), DBusArgument("detail", String.self),
                                 DBusArgument("verification_token", String.self)]
    /// Unix seconds of the test day's UTC midnight; 0 when unknown (the health authority gave none).
    public var testDate: UInt64
    /// A VerificationMethod's raw value.
    public var method: String
    public var detail: String
    /// The verification server's token; "" for none.
    public var verificationToken: String
    public init(testDate: UInt64, method: String, detail: String, verificationToken: String) {
        (self.testDate, self.method, self.detail, self.verificationToken) = (testDate, method, detail, verificationToken)
    }
    public var values: [DBusValue] { [testDate.dbusValue, method.dbusValue, detail.dbusValue, verificationToken.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (testDate, method, detail, verificationToken) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
    }
}

public struct TestResultID: DBusRecord, Equatable {
    public static let members = [DBusArgument("id", String.self)]
    public var id: String
    public init(id: String) { self.id = id }
    public var values: [DBusValue] { [id.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { id = try reader.next() }
}

public struct TestResults: DBusRecord, Equatable {
    public static let members = [DBusArgument("results", [TestResultRecord].self)]
    public var results: [TestResultRecord]
    public init(results: [TestResultRecord]) { self.results = results }
    public var values: [DBusValue] { [results.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { results = try reader.next() }
}

/// SetVerificationToken's arguments: a test result's token from a new verification code, or ""
/// once the verification server has spent it on a certificate (a token is good for one).
public struct VerificationTokenUpdate: DBusRecord, Equatable {
    public static let members = [DBusArgument("test_result_id", String.self), DBusArgument("verification_token", String.self)]
    public var testResultId: String
    public var verificationToken: String
    public init(testResultId: String, verificationToken: String) { (self.testResultId, self.verificationToken) = (testResultId, verificationToken) }
    public var values: [DBusValue] { [testResultId.dbusValue, verificationToken.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { (testResultId, verificationToken) = (try reader.next(), try reader.next()) }
}

/// QueueUpload's arguments: a key upload the daemon keeps until the key server took it or
/// refused it for good, and the keys it carries (16 bytes each; kept as shared once accepted).
public struct QueuedUpload: DBusRecord, Equatable {
    public static let members = [DBusArgument("test_result_id", String.self), DBusArgument("url", String.self), DBusArgument("body", String.self),
                                 DBusArgument("key_data", [[UInt8]].self)]
    public var testResultId: String
    public var url: String
    /// The publish request's JSON.
    public var body: String
    public var keys: [[UInt8]]
    public init(testResultId: String, url: String, body: String, keys: [[UInt8]]) {
        (self.testResultId, self.url, self.body, self.keys) = (testResultId, url, body, keys)
    }
    public var values: [DBusValue] { [testResultId.dbusValue, url.dbusValue, body.dbusValue, keys.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (testResultId, url, body, keys) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
    }
}

/// One entry of GetPendingUploads.
public struct PendingUploadRecord: DBusRecord, Equatable {
    public static let members = [DBusArgument("test_result_id", String.self), DBusArgument("url", String.self), DBusArgument("body", String.self),
                                 DBusArgument("attempts", UInt32.self), DBusArgument("last_error", String.self),
                                 DBusArgument("next_attempt_at", UInt64.self)]
    public var testResultId: String
    public var url: String
    public var body: String
    public var attempts: UInt32
    /// Why the last attempt failed; "" before the first.
    public var lastError: String
    /// Unix seconds before which the timer does not send it again.
    public var nextAttemptAt: UInt64
    public init(testResultId: String, url: String, body: String, attempts: UInt32, lastError: String, nextAttemptAt: UInt64) {
        (self.testResultId, self.url, self.body) = (testResultId, url, body)
        (self.attempts, self.lastError, self.nextAttemptAt) = (attempts, lastError, nextAttemptAt)
    }
    public var values: [DBusValue] {
        [testResultId.dbusValue, url.dbusValue, body.dbusValue, attempts.dbusValue, lastError.dbusValue, nextAttemptAt.dbusValue]
    }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (testResultId, url, body) = (try reader.next(), try reader.next(), try reader.next())
        (attempts, lastError, nextAttemptAt) = (try reader.next(), try reader.next(), try reader.next())
    }
}

public struct PendingUploadList: DBusRecord, Equatable {
    public static let members = [DBusArgument("uploads", [PendingUploadRecord].self)]
    public var uploads: [PendingUploadRecord]
    public init(uploads: [PendingUploadRecord]) { self.uploads = uploads }
    public var values: [DBusValue] { [uploads.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { uploads = try reader.next() }
}

/// FinishUpload's arguments: what the key server made of one attempt.
public struct UploadOutcome: DBusRecord, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The server took the keys.
        case accepted
        /// Refused for now (5xx, 408, 429, no network): sent again later, with backoff.
        case retry
        /// Refused for good (another 4xx, a protocol error): never sent again.
        case refused
    }

    public static let members = [DBusArgument("test_result_id", String.self), DBusArgument("outcome", String.self), DBusArgument("reason", String.self),
                                 DBusArgument("revision_token", String.self), DBusArgument("retry_after", UInt64.self)]
    public var testResultId: String
    /// A Kind's raw value.
    public var outcome: String
    /// The server's reason, for retry and refused; for accepted, what the server said beside
    /// taking the keys (the keys it dropped), "" for nothing.
    public var reason: String
    /// The key server's revisionToken, for accepted ("" for none).
    public var revisionToken: String
    /// The server's Retry-After in seconds, for retry (0: the daemon's backoff decides).
    public var retryAfter: UInt64
    public init(testResultId: String, outcome: Kind, reason: String = "", revisionToken: String = "", retryAfter: UInt64 = 0) {
        (self.testResultId, self.outcome, self.reason) = (testResultId, outcome.rawValue, reason)
        (self.revisionToken, self.retryAfter) = (revisionToken, retryAfter)
    }
    public var values: [DBusValue] {
        [testResultId.dbusValue, outcome.dbusValue, reason.dbusValue, revisionToken.dbusValue, retryAfter.dbusValue]
    }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (testResultId, outcome, reason) = (try reader.next(), try reader.next(), try reader.next())
        (revisionToken, retryAfter) = (try reader.next(), try reader.next())
    }
}

/// GetHealthStatus's reply: what tells that the person was exposed or tested positive.
public struct HealthStatus: DBusRecord, Equatable, Encodable {
    public static let members = [DBusArgument("latest_exposure_day", UInt64.self), DBusArgument("reminders", [String].self)]
    /// Unix seconds of the UTC midnight of the latest exposure; 0 for none.
    public var latestExposureDay: UInt64
    /// Every reminder due, those about exposure and diagnosis included.
    public var reminders: [String]
    public init(latestExposureDay: UInt64, reminders: [String]) { (self.latestExposureDay, self.reminders) = (latestExposureDay, reminders) }
    public var values: [DBusValue] { [latestExposureDay.dbusValue, reminders.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (latestExposureDay, reminders) = (try reader.next(), try reader.next())
    }
}

public struct ExposureDetectedArguments: DBusRecord, Equatable {
    public static let members = [DBusArgument("new_windows", UInt32.self)]
    public var newWindows: UInt32
    public init(newWindows: UInt32) { self.newWindows = newWindows }
    public var values: [DBusValue] { [newWindows.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { newWindows = try reader.next() }
}

// MARK: Sightings per hour

/// GetSightingsPerHour's argument: a client that has the earlier hours asks for the latest only,
/// which the daemon counts from its index on time instead of the whole table.
public struct SightingsPerHourRequest: DBusRecord, Equatable {
    public static let members = [DBusArgument("since", UInt64.self)]
    /// Unix seconds: the hours from the one this falls in; 0 for the whole retention period.
    public var since: UInt64
    public init(since: UInt64) { self.since = since }
    public var values: [DBusValue] { [since.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { since = try reader.next() }
}

/// GetSightingsPerHour's reply: every UTC hour asked for with a sighting, oldest first.
public struct SightingsPerHour: DBusRecord, Equatable {
    public static let members = [DBusArgument("hours", [SightingHourRecord].self)]
    public var hours: [SightingHourRecord]
    public init(hours: [SightingHourRecord]) { self.hours = hours }
    public var values: [DBusValue] { [hours.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) { hours = try reader.next() }
}

/// One hour's counts: no identifier, only how many sightings and how many distinct rolling
/// proximity identifiers among them.
public struct SightingHourRecord: DBusRecord, Equatable, Encodable {
    public static let members = [DBusArgument("hour_start", UInt64.self), DBusArgument("sightings", UInt32.self),
                                 DBusArgument("distinct_identifiers", UInt32.self)]
    /// Unix seconds of the hour's start.
    public var hourStart: UInt64
    public var sightings: UInt32
    public var distinctIdentifiers: UInt32
    public init(hourStart: UInt64, sightings: UInt32, distinctIdentifiers: UInt32) {
        (self.hourStart, self.sightings, self.distinctIdentifiers) = (hourStart, sightings, distinctIdentifiers)
    }
    public var values: [DBusValue] { [hourStart.dbusValue, sightings.dbusValue, distinctIdentifiers.dbusValue] }
    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (hourStart, sightings, distinctIdentifiers) = (try reader.next(), try reader.next(), try reader.next())
    }
}

// MARK: Records inside replies

/// A stored exposure window without its diagnosis key, which never leaves the daemon.
public struct ExposureWindowRecord: DBusRecord, Equatable {
    public static let members = [DBusArgument("date", UInt64.self), DBusArgument("report_type", UInt32.self), DBusArgument("infectiousness", UInt32.self),
                                 DBusArgument("calibration_confidence", UInt32.self), DBusArgument("scan_instances", [ScanInstance].self)]
    /// Unix seconds of the UTC midnight.
    public var date: UInt64
    /// ReportType's raw value.
    public var reportType: UInt32
    /// Infectiousness's raw value.
    public var infectiousness: UInt32
    public var calibrationConfidence: UInt32
    public var scanInstances: [ScanInstance]

    public init(_ window: ExposureWindow) {
        date = UInt64(window.date)
        reportType = UInt32(window.reportType.rawValue)
        infectiousness = UInt32(window.infectiousness.rawValue)
        calibrationConfidence = UInt32(window.calibrationConfidence)
        scanInstances = window.scanInstances
    }

    public var values: [DBusValue] {
        [date.dbusValue, reportType.dbusValue, infectiousness.dbusValue, calibrationConfidence.dbusValue, scanInstances.dbusValue]
    }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (date, reportType, infectiousness, calibrationConfidence) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
        scanInstances = try reader.next()
    }
}

/// A test result as the daemon keeps it.
public struct TestResultRecord: DBusRecord, Equatable {
    public static let members = [DBusArgument("id", String.self), DBusArgument("test_date", UInt64.self), DBusArgument("method", String.self),
                                 DBusArgument("detail", String.self), DBusArgument("recorded_at", UInt64.self), DBusArgument("shared_at", UInt64.self),
                                 DBusArgument("upload_pending", Bool.self), DBusArgument("verification_token", String.self),
                                 DBusArgument("upload_failure", String.self), DBusArgument("revision_token", String.self),
                                 DBusArgument("shared_keys", [[UInt8]].self)]
    public var id: String
    /// Unix seconds of the test day's UTC midnight.
    public var testDate: UInt64
    public var method: String
    public var detail: String
    public var recordedAt: UInt64
    /// 0 when not shared yet.
    public var sharedAt: UInt64
    public var uploadPending: Bool
    public var verificationToken: String
    /// Why the key server refused the upload for good; "" when it did not.
    public var uploadFailure: String
    /// The key server's token for this diagnosis, sent with its next upload; "" for none yet.
    public var revisionToken: String
    /// The keys the key server accepted for this result (16 bytes each).
    public var sharedKeys: [[UInt8]]

    public init(id: String, testDate: UInt64, method: String, detail: String, recordedAt: UInt64, sharedAt: UInt64, uploadPending: Bool,
                verificationToken: String, uploadFailure: String = "", revisionToken: String = "", sharedKeys: [[UInt8]] = []) {
        (self.id, self.testDate, self.method, self.detail) = (id, testDate, method, detail)
        (self.recordedAt, self.sharedAt, self.uploadPending, self.verificationToken) = (recordedAt, sharedAt, uploadPending, verificationToken)
        (self.uploadFailure, self.revisionToken, self.sharedKeys) = (uploadFailure, revisionToken, sharedKeys)
    }

    public var values: [DBusValue] {
        [id.dbusValue, testDate.dbusValue, method.dbusValue, detail.dbusValue, recordedAt.dbusValue, sharedAt.dbusValue, uploadPending.dbusValue,
         verificationToken.dbusValue, uploadFailure.dbusValue, revisionToken.dbusValue, sharedKeys.dbusValue]
    }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (id, testDate, method, detail) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
        (recordedAt, sharedAt, uploadPending, verificationToken) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
        (uploadFailure, revisionToken, sharedKeys) = (try reader.next(), try reader.next(), try reader.next())
    }
}

extension TemporaryExposureKey: DBusRecord {
    public static let members = [DBusArgument("key_data", [UInt8].self), DBusArgument("rolling_start_interval_number", UInt32.self),
                                 DBusArgument("rolling_period", UInt32.self), DBusArgument("transmission_risk_level", UInt32.self)]

    public var values: [DBusValue] {
        [keyData.bytes.dbusValue, rollingStartIntervalNumber.rawValue.dbusValue, rollingPeriod.dbusValue, UInt32(transmissionRiskLevel).dbusValue]
    }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        let bytes: [UInt8] = try reader.next()
        guard let keyData = Bytes16(bytes: bytes) else { throw ContractMismatch("key_data: expected 16 bytes, got \(bytes.count)") }
        self.init(keyData: keyData, rollingStartIntervalNumber: ENIntervalNumber(try reader.next(UInt32.self)), rollingPeriod: try reader.next(),
                  transmissionRiskLevel: Int(try reader.next(UInt32.self)))
    }
}

/// Unknown attenuations travel as -1.
extension ScanInstance: DBusRecord {
    public static let members = [DBusArgument("min_attenuation", Int32.self), DBusArgument("typical_attenuation", Int32.self),
                                 DBusArgument("seconds_since_last_scan", UInt32.self)]

    public var values: [DBusValue] {
        [Int32(minAttenuation ?? -1).dbusValue, Int32(typicalAttenuation ?? -1).dbusValue, UInt32(secondsSinceLastScan).dbusValue]
    }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        let minimum = try reader.next(Int32.self), typical = try reader.next(Int32.self)
        self.init(minAttenuation: minimum < 0 ? nil : Int(minimum), typicalAttenuation: typical < 0 ? nil : Int(typical),
                  secondsSinceLastScan: Int(try reader.next(UInt32.self)))
    }
}

extension DailySummary: DBusRecord {
    public static let members = [DBusArgument("date", UInt64.self), DBusArgument("maximum_score", Double.self), DBusArgument("score_sum", Double.self),
                                 DBusArgument("weighted_duration_sum", Double.self)]

    public var values: [DBusValue] { [UInt64(date).dbusValue, maximumScore.dbusValue, scoreSum.dbusValue, weightedDurationSum.dbusValue] }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        self.init(date: Int64(try reader.next(UInt64.self)), maximumScore: try reader.next(), scoreSum: try reader.next(), weightedDurationSum: try reader.next())
    }
}

/// An unknown attenuation value travels as -1.
extension ExposureInfo: DBusRecord {
    public static let members = [DBusArgument("date", UInt64.self), DBusArgument("duration_minutes", UInt32.self),
                                 DBusArgument("attenuation_value", Int32.self), DBusArgument("attenuation_durations_minutes", [UInt32].self),
                                 DBusArgument("transmission_risk_level", UInt32.self), DBusArgument("total_risk_score", UInt32.self),
                                 DBusArgument("days_since_exposure", UInt32.self)]

    public var values: [DBusValue] {
        [UInt64(date).dbusValue, UInt32(durationMinutes).dbusValue, Int32(attenuationValue ?? -1).dbusValue,
         attenuationDurationsMinutes.map { UInt32($0) }.dbusValue, UInt32(transmissionRiskLevel).dbusValue, UInt32(totalRiskScore).dbusValue,
         UInt32(daysSinceExposure).dbusValue]
    }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        let date = Int64(try reader.next(UInt64.self)), duration = Int(try reader.next(UInt32.self)), attenuation = try reader.next(Int32.self)
        let durations = try reader.next([UInt32].self).map(Int.init)
        self.init(date: date, durationMinutes: duration, attenuationValue: attenuation < 0 ? nil : Int(attenuation), attenuationDurationsMinutes: durations,
                  transmissionRiskLevel: Int(try reader.next(UInt32.self)), totalRiskScore: Int(try reader.next(UInt32.self)),
                  daysSinceExposure: Int(try reader.next(UInt32.self)))
    }
}

// MARK: Properties

/// One adapter's receive calibration, as AdapterRssiCorrections lists it.
public struct AdapterRssiCorrection: DBusRecord, Equatable, Encodable {
    public static let members = [DBusArgument("address", String.self), DBusArgument("name", String.self),
                                 DBusArgument("rssi_correction", Int32.self), DBusArgument("configured", Bool.self)]
    /// Such as 00:1A:7D:DA:71:13; "" when BlueZ has not given the address of the adapter in use.
    public var address: String
    /// Such as hci0 for the adapter in use; "" for another.
    public var name: String
    /// dB added to every RSSI of its sightings.
    public var rssiCorrection: Int32
    /// Whether the configuration names the adapter; else it gets the default (RssiCorrection).
    public var configured: Bool

    public init(address: String, name: String, rssiCorrection: Int32, configured: Bool) {
        (self.address, self.name, self.rssiCorrection, self.configured) = (address, name, rssiCorrection, configured)
    }

    public var values: [DBusValue] { [address.dbusValue, name.dbusValue, rssiCorrection.dbusValue, configured.dbusValue] }

    public init(reading reader: inout DBusRecordReader) throws(ContractMismatch) {
        (address, name, rssiCorrection, configured) = (try reader.next(), try reader.next(), try reader.next(), try reader.next())
    }
}

/// Every property, as one GetAll answers them (encoded with the Swift names: `enctl status --json`).
public struct AgentProperties: Sendable, Equatable, Encodable {
    private typealias P = ExposureNotificationAPI.Properties
    public var enabled: Bool, status: String, pausedUntil: UInt64, adapter: String, advertising: Bool, scanning: Bool
    public var lastDetection: UInt64, lastDetectionError: String, sightingsStored: UInt64, reminders: [String]
    public var version: String, rssiCorrection: Int32, adapterRssiCorrections: [AdapterRssiCorrection]

    /// The properties' names and types, in the interface's order.
    public static let declarations: [DBusArgument] = [
        P.enabled.declaration, P.status.declaration, P.pausedUntil.declaration, P.adapter.declaration, P.advertising.declaration,
        P.scanning.declaration, P.lastDetection.declaration, P.lastDetectionError.declaration, P.sightingsStored.declaration,
        P.reminders.declaration, P.version.declaration, P.rssiCorrection.declaration,
        P.adapterRssiCorrections.declaration,
    ]

    public init(_ properties: [String: DBusValue]) throws(ContractMismatch) {
        (enabled, status, pausedUntil) = (try P.enabled.value(in: properties), try P.status.value(in: properties), try P.pausedUntil.value(in: properties))
        (adapter, advertising, scanning) = (try P.adapter.value(in: properties), try P.advertising.value(in: properties), try P.scanning.value(in: properties))
        lastDetection = try P.lastDetection.value(in: properties)
        lastDetectionError = try P.lastDetectionError.value(in: properties)
        sightingsStored = try P.sightingsStored.value(in: properties)
        reminders = try P.reminders.value(in: properties)
        version = try P.version.value(in: properties)
        rssiCorrection = try P.rssiCorrection.value(in: properties)
        adapterRssiCorrections = try P.adapterRssiCorrections.value(in: properties)
    }
}
