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
    public static let fields: [DBusField<Self>] = [DBusField("enabled", \.enabled)]
    public var enabled = false
    public init() {}
    public init(enabled: Bool) { self.enabled = enabled }
}

public struct PauseArguments: DBusRecord, Equatable {
    /// The longest pause: enagentd takes a longer one as this long, and enctl refuses it.
    public static let longestSeconds: UInt64 = 366 * 86_400
    public static let fields: [DBusField<Self>] = [DBusField("seconds", \.seconds)]
    public var seconds: UInt64 = 0
    public init() {}
    public init(seconds: UInt64) { self.seconds = seconds }
}

/// Keys are released only with the person's confirmation, given anew for every request.
public struct KeyHistoryRequest: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("confirmed", \.confirmed)]
    public var confirmed = false
    public init() {}
    public init(confirmed: Bool) { self.confirmed = confirmed }
}

public struct KeyHistory: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("keys", \.keys)]
    public var keys: [TemporaryExposureKey] = []
    public init() {}
    public init(keys: [TemporaryExposureKey]) { self.keys = keys }
}

public struct DetectionRequest: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("key_files", \.keyFiles), DBusField("configuration", \.configuration)]
    /// Export zips, open for reading; the daemon closes its copies.
    public var keyFiles: [FileDescriptor] = []
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration = ""
    public init() {}
    public init(keyFiles: [FileDescriptor], configuration: String) { (self.keyFiles, self.configuration) = (keyFiles, configuration) }
}

public struct DetectionReply: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("summary", \.summary)]
    public var summary = DetectionSummary()
    public init() {}
    public init(summary: DetectionSummary) { self.summary = summary }
}

public struct DetectionSessionRequest: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("configuration", \.configuration), DBusField("max_keys", \.maxKeys)]
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration = ""
    /// The most keys the session may check; 0 for no limit.
    public var maxKeys: UInt64 = 0
    public init() {}
    public init(configuration: String, maxKeys: UInt64) { (self.configuration, self.maxKeys) = (configuration, maxKeys) }
}

/// A detection session, named by StartDetection; only the caller that started it may use it.
public struct DetectionSessionHandle: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("session", \.session)]
    public var session = ""
    public init() {}
    public init(session: String) { self.session = session }
}

public struct KeyFileBatch: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("session", \.session), DBusField("key_files", \.keyFiles)]
    public var session = ""
    /// Export zips, open for reading; the daemon closes its copies.
    public var keyFiles: [FileDescriptor] = []
    public init() {}
    public init(session: String, keyFiles: [FileDescriptor]) { (self.session, self.keyFiles) = (session, keyFiles) }
}

public struct DetectionProgressArguments: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("session", \.session), DBusField("progress", \.progress)]
    public var session = ""
    /// The session so far; NewExposureWindows stays 0 until FinishDetection.
    public var progress = DetectionSummary()
    public init() {}
    public init(session: String, progress: DetectionSummary) { (self.session, self.progress) = (session, progress) }
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
    public static let fields: [DBusField<Self>] = [DBusField("windows", \.windows)]
    public var windows: [ExposureWindowRecord] = []
    public init() {}
    public init(windows: [ExposureWindowRecord]) { self.windows = windows }
}

public struct ConfigurationArgument: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("configuration", \.configuration)]
    /// Exposure configuration JSON; "" for the protocol's defaults.
    public var configuration = ""
    public init() {}
    public init(configuration: String) { self.configuration = configuration }
}

public struct DailySummaries: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("summaries", \.summaries)]
    public var summaries: [DailySummary] = []
    public init() {}
    public init(summaries: [DailySummary]) { self.summaries = summaries }
}

public struct ExposureInfos: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("exposures", \.exposures)]
    public var exposures: [ExposureInfo] = []
    public init() {}
    public init(exposures: [ExposureInfo]) { self.exposures = exposures }
}

public struct NewTestResult: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [
        DBusField("test_date", \.testDate), DBusField("method", \.method), DBusField("detail", \.detail),
        DBusField("verification_token", \.verificationToken),
    ]
    /// Unix seconds of the test day's UTC midnight; 0 when unknown (the health authority gave none).
    public var testDate: UInt64 = 0
    /// A VerificationMethod's raw value.
    public var method = ""
    public var detail = ""
    /// The verification server's token; "" for none.
    public var verificationToken = ""
    public init() {}
    public init(testDate: UInt64, method: String, detail: String, verificationToken: String) {
        (self.testDate, self.method, self.detail, self.verificationToken) = (testDate, method, detail, verificationToken)
    }
}

public struct TestResultID: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("id", \.id)]
    public var id = ""
    public init() {}
    public init(id: String) { self.id = id }
}

public struct TestResults: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("results", \.results)]
    public var results: [TestResultRecord] = []
    public init() {}
    public init(results: [TestResultRecord]) { self.results = results }
}

/// SetVerificationToken's arguments: a test result's token from a new verification code, or ""
/// once the verification server has spent it on a certificate (a token is good for one).
public struct VerificationTokenUpdate: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("test_result_id", \.testResultId), DBusField("verification_token", \.verificationToken)]
    public var testResultId = ""
    public var verificationToken = ""
    public init() {}
    public init(testResultId: String, verificationToken: String) { (self.testResultId, self.verificationToken) = (testResultId, verificationToken) }
}

/// QueueUpload's arguments: a key upload the daemon keeps until the key server took it or
/// refused it for good, and the keys it carries (16 bytes each; kept as shared once accepted).
public struct QueuedUpload: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [
        DBusField("test_result_id", \.testResultId), DBusField("url", \.url), DBusField("body", \.body), DBusField("key_data", \.keys),
    ]
    public var testResultId = ""
    public var url = ""
    /// The publish request's JSON.
    public var body = ""
    public var keys: [[UInt8]] = []
    public init() {}
    public init(testResultId: String, url: String, body: String, keys: [[UInt8]]) {
        (self.testResultId, self.url, self.body, self.keys) = (testResultId, url, body, keys)
    }
}

/// One entry of GetPendingUploads.
public struct PendingUploadRecord: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [
        DBusField("test_result_id", \.testResultId), DBusField("url", \.url), DBusField("body", \.body), DBusField("attempts", \.attempts),
        DBusField("last_error", \.lastError), DBusField("next_attempt_at", \.nextAttemptAt),
    ]
    public var testResultId = ""
    public var url = ""
    public var body = ""
    public var attempts: UInt32 = 0
    /// Why the last attempt failed; "" before the first.
    public var lastError = ""
    /// Unix seconds before which the timer does not send it again.
    public var nextAttemptAt: UInt64 = 0
    public init() {}
    public init(testResultId: String, url: String, body: String, attempts: UInt32, lastError: String, nextAttemptAt: UInt64) {
        (self.testResultId, self.url, self.body) = (testResultId, url, body)
        (self.attempts, self.lastError, self.nextAttemptAt) = (attempts, lastError, nextAttemptAt)
    }
}

public struct PendingUploadList: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("uploads", \.uploads)]
    public var uploads: [PendingUploadRecord] = []
    public init() {}
    public init(uploads: [PendingUploadRecord]) { self.uploads = uploads }
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

    public static let fields: [DBusField<Self>] = [
        DBusField("test_result_id", \.testResultId), DBusField("outcome", \.outcome), DBusField("reason", \.reason),
        DBusField("revision_token", \.revisionToken), DBusField("retry_after", \.retryAfter),
    ]
    public var testResultId = ""
    /// A Kind's raw value.
    public var outcome = ""
    /// The server's reason, for retry and refused; for accepted, what the server said beside
    /// taking the keys (the keys it dropped), "" for nothing.
    public var reason = ""
    /// The key server's revisionToken, for accepted ("" for none).
    public var revisionToken = ""
    /// The server's Retry-After in seconds, for retry (0: the daemon's backoff decides).
    public var retryAfter: UInt64 = 0
    public init() {}
    public init(testResultId: String, outcome: Kind, reason: String = "", revisionToken: String = "", retryAfter: UInt64 = 0) {
        (self.testResultId, self.outcome, self.reason) = (testResultId, outcome.rawValue, reason)
        (self.revisionToken, self.retryAfter) = (revisionToken, retryAfter)
    }
}

/// GetHealthStatus's reply: what tells that the person was exposed or tested positive: the
/// latest detection's risk verdict by the health authority's rules, and the reminders.
public struct HealthStatus: DBusRecord, Equatable, Encodable {
    public static let fields: [DBusField<Self>] = [
        DBusField("latest_exposure_day", \.latestExposureDay), DBusField("reminders", \.reminders),
        DBusField("risk", \.risk), DBusField("risk_model", \.riskModel), DBusField("risk_assessed_at", \.riskAssessedAt),
        DBusField("increased_risk_days", \.increasedRiskDays), DBusField("increased_risk_encounters", \.increasedRiskEncounters),
        DBusField("latest_low_risk_day", \.latestLowRiskDay), DBusField("low_risk_days", \.lowRiskDays),
        DBusField("low_risk_encounters", \.lowRiskEncounters),
    ]
    /// Unix seconds of the UTC midnight of the latest day of increased risk (the only exposure
    /// that alarms); 0 for none.
    public var latestExposureDay: UInt64 = 0
    /// Every reminder due, those about exposure and diagnosis included.
    public var reminders: [String] = []
    /// RiskLevel's raw value: none, low or increased.
    public var risk = RiskLevel.none.rawValue
    /// RiskConfiguration.Model's raw value; "" before any detection gave a verdict.
    public var riskModel = ""
    /// Unix seconds of the verdict; 0 for none.
    public var riskAssessedAt: UInt64 = 0
    public var increasedRiskDays: UInt32 = 0
    public var increasedRiskEncounters: UInt32 = 0
    /// Unix seconds of the UTC midnight of the latest day of low risk; 0 for none.
    public var latestLowRiskDay: UInt64 = 0
    public var lowRiskDays: UInt32 = 0
    public var lowRiskEncounters: UInt32 = 0
    public init() {}

    /// `verdict` nil: no detection has given one yet.
    public init(verdict: RiskVerdict?, model: String, assessedAt: Int64, reminders: [String]) {
        self.reminders = reminders
        guard let verdict else { return }
        (risk, riskModel, riskAssessedAt) = (verdict.total.rawValue, model, UInt64(clamping: assessedAt))
        latestExposureDay = UInt64(clamping: verdict.latestIncreasedRiskDay ?? 0)
        (increasedRiskDays, increasedRiskEncounters) = (UInt32(clamping: verdict.increasedRiskDays), UInt32(clamping: verdict.increasedRiskEncounters))
        latestLowRiskDay = UInt64(clamping: verdict.latestLowRiskDay ?? 0)
        (lowRiskDays, lowRiskEncounters) = (UInt32(clamping: verdict.lowRiskDays), UInt32(clamping: verdict.lowRiskEncounters))
    }

    /// The verdict as the daemon gave it; nil before any.
    public var verdict: RiskVerdict? {
        guard !riskModel.isEmpty, let total = RiskLevel(rawValue: risk) else { return nil }
        return RiskVerdict(total: total, lowRiskDays: Int(lowRiskDays), increasedRiskDays: Int(increasedRiskDays),
                           latestLowRiskDay: latestLowRiskDay > 0 ? Int64(latestLowRiskDay) : nil,
                           latestIncreasedRiskDay: latestExposureDay > 0 ? Int64(latestExposureDay) : nil,
                           lowRiskEncounters: Int(lowRiskEncounters), increasedRiskEncounters: Int(increasedRiskEncounters))
    }
}

/// ExposureDetected's arguments: sent when a detection's verdict rises to increased risk, or finds
/// it on a later day or from more encounters.
public struct ExposureDetectedArguments: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("latest_exposure_day", \.latestExposureDay)]
    /// Unix seconds of the UTC midnight of the latest day of increased risk.
    public var latestExposureDay: UInt64 = 0
    public init() {}
    public init(latestExposureDay: UInt64) { self.latestExposureDay = latestExposureDay }
}

// MARK: Sightings per hour

/// GetSightingsPerHour's argument: a client that has the earlier hours asks for the latest only,
/// which the daemon counts from its index on time instead of the whole table.
public struct SightingsPerHourRequest: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("since", \.since)]
    /// Unix seconds: the hours from the one this falls in; 0 for the whole retention period.
    public var since: UInt64 = 0
    public init() {}
    public init(since: UInt64) { self.since = since }
}

/// GetSightingsPerHour's reply: every UTC hour asked for with a sighting, oldest first.
public struct SightingsPerHour: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [DBusField("hours", \.hours)]
    public var hours: [SightingHourRecord] = []
    public init() {}
    public init(hours: [SightingHourRecord]) { self.hours = hours }
}

/// One hour's counts: no identifier, only how many sightings and how many distinct rolling
/// proximity identifiers among them.
public struct SightingHourRecord: DBusRecord, Equatable, Encodable {
    public static let fields: [DBusField<Self>] = [
        DBusField("hour_start", \.hourStart), DBusField("sightings", \.sightings), DBusField("distinct_identifiers", \.distinctIdentifiers),
    ]
    /// Unix seconds of the hour's start.
    public var hourStart: UInt64 = 0
    public var sightings: UInt32 = 0
    public var distinctIdentifiers: UInt32 = 0
    public init() {}
    public init(hourStart: UInt64, sightings: UInt32, distinctIdentifiers: UInt32) {
        (self.hourStart, self.sightings, self.distinctIdentifiers) = (hourStart, sightings, distinctIdentifiers)
    }
}

// MARK: Records inside replies

/// A stored exposure window without its diagnosis key, which never leaves the daemon.
public struct ExposureWindowRecord: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [
        DBusField("date", \.date), DBusField("report_type", \.reportType), DBusField("infectiousness", \.infectiousness),
        DBusField("calibration_confidence", \.calibrationConfidence), DBusField("scan_instances", \.scanInstances),
    ]
    /// Unix seconds of the UTC midnight.
    public var date: UInt64 = 0
    /// ReportType's raw value.
    public var reportType: UInt32 = 0
    /// Infectiousness's raw value.
    public var infectiousness: UInt32 = 0
    public var calibrationConfidence: UInt32 = 0
    public var scanInstances: [ScanInstance] = []

    public init() {}

    public init(_ window: ExposureWindow) {
        date = UInt64(window.date)
        reportType = UInt32(window.reportType.rawValue)
        infectiousness = UInt32(window.infectiousness.rawValue)
        calibrationConfidence = UInt32(window.calibrationConfidence)
        scanInstances = window.scanInstances
    }
}

/// A test result as the daemon keeps it.
public struct TestResultRecord: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = [
        DBusField("id", \.id), DBusField("test_date", \.testDate), DBusField("method", \.method), DBusField("detail", \.detail),
        DBusField("recorded_at", \.recordedAt), DBusField("shared_at", \.sharedAt), DBusField("upload_pending", \.uploadPending),
        DBusField("verification_token", \.verificationToken), DBusField("upload_failure", \.uploadFailure),
        DBusField("revision_token", \.revisionToken), DBusField("shared_keys", \.sharedKeys),
    ]
    public var id = ""
    /// Unix seconds of the test day's UTC midnight.
    public var testDate: UInt64 = 0
    public var method = ""
    public var detail = ""
    public var recordedAt: UInt64 = 0
    /// 0 when not shared yet.
    public var sharedAt: UInt64 = 0
    public var uploadPending = false
    public var verificationToken = ""
    /// Why the key server refused the upload for good; "" when it did not.
    public var uploadFailure = ""
    /// The key server's token for this diagnosis, sent with its next upload; "" for none yet.
    public var revisionToken = ""
    /// The keys the key server accepted for this result (16 bytes each).
    public var sharedKeys: [[UInt8]] = []

    public init() {}

    public init(id: String, testDate: UInt64, method: String, detail: String, recordedAt: UInt64, sharedAt: UInt64, uploadPending: Bool,
                verificationToken: String, uploadFailure: String = "", revisionToken: String = "", sharedKeys: [[UInt8]] = []) {
        (self.id, self.testDate, self.method, self.detail) = (id, testDate, method, detail)
        (self.recordedAt, self.sharedAt, self.uploadPending, self.verificationToken) = (recordedAt, sharedAt, uploadPending, verificationToken)
        (self.uploadFailure, self.revisionToken, self.sharedKeys) = (uploadFailure, revisionToken, sharedKeys)
    }
}

// The protocol's own types travel with the contract's fixed-width integers; decoding fills an
// empty one (`init()`), as it does the records above.

extension TemporaryExposureKey: DBusRecord {
    public static let fields: [DBusField<Self>] = [
        DBusField("key_data", \.keyData, as: DBusConversion(encode: \.bytes, decode: { bytes throws(ContractMismatch) in
            guard let keyData = Bytes16(bytes: bytes) else { throw ContractMismatch("expected 16 bytes, got \(bytes.count)") }
            return keyData
        })),
        DBusField("rolling_start_interval_number", \.rollingStartIntervalNumber,
                  as: DBusConversion(encode: \.rawValue, decode: { interval throws(ContractMismatch) in ENIntervalNumber(interval) })),
        DBusField("rolling_period", \.rollingPeriod), DBusField("transmission_risk_level", \.transmissionRiskLevel, as: .integer(UInt32.self)),
    ]

    public init() { self.init(keyData: Bytes16(high: 0, low: 0), rollingStartIntervalNumber: ENIntervalNumber(0)) }
}

extension ScanInstance: DBusRecord {
    public static let fields: [DBusField<Self>] = [
        DBusField("min_attenuation", \.minAttenuation, as: .unknownAsMinusOne),
        DBusField("typical_attenuation", \.typicalAttenuation, as: .unknownAsMinusOne),
        DBusField("seconds_since_last_scan", \.secondsSinceLastScan, as: .integer(UInt32.self)),
    ]

    public init() { self.init(minAttenuation: nil, typicalAttenuation: nil, secondsSinceLastScan: 0) }
}

extension DailySummary: DBusRecord {
    public static let fields: [DBusField<Self>] = [
        DBusField("date", \.date, as: .integer(UInt64.self)), DBusField("maximum_score", \.maximumScore), DBusField("score_sum", \.scoreSum),
        DBusField("weighted_duration_sum", \.weightedDurationSum),
    ]

    public init() { self.init(date: 0, maximumScore: 0, scoreSum: 0, weightedDurationSum: 0) }
}

extension ExposureInfo: DBusRecord {
    public static let fields: [DBusField<Self>] = [
        DBusField("date", \.date, as: .integer(UInt64.self)), DBusField("duration_minutes", \.durationMinutes, as: .integer(UInt32.self)),
        DBusField("attenuation_value", \.attenuationValue, as: .unknownAsMinusOne),
        DBusField("attenuation_durations_minutes", \.attenuationDurationsMinutes, as: .integers(UInt32.self)),
        DBusField("transmission_risk_level", \.transmissionRiskLevel, as: .integer(UInt32.self)),
        DBusField("total_risk_score", \.totalRiskScore, as: .integer(UInt32.self)),
        DBusField("days_since_exposure", \.daysSinceExposure, as: .integer(UInt32.self)),
    ]

    public init() {
        self.init(date: 0, durationMinutes: 0, attenuationValue: nil, attenuationDurationsMinutes: [], transmissionRiskLevel: 0, totalRiskScore: 0,
                  daysSinceExposure: 0)
    }
}

// MARK: Properties

/// One adapter's receive calibration, as AdapterRssiCorrections lists it.
public struct AdapterRssiCorrection: DBusRecord, Equatable, Encodable {
    public static let fields: [DBusField<Self>] = [
        DBusField("address", \.address), DBusField("name", \.name), DBusField("rssi_correction", \.rssiCorrection),
        DBusField("configured", \.configured),
    ]
    /// Such as 00:1A:7D:DA:71:13; "" when BlueZ has not given the address of the adapter in use.
    public var address = ""
    /// Such as hci0 for the adapter in use; "" for another.
    public var name = ""
    /// dB added to every RSSI of its sightings.
    public var rssiCorrection: Int32 = 0
    /// Whether the configuration names the adapter; else it gets the default (RssiCorrection).
    public var configured = false

    public init() {}

    public init(address: String, name: String, rssiCorrection: Int32, configured: Bool) {
        (self.address, self.name, self.rssiCorrection, self.configured) = (address, name, rssiCorrection, configured)
    }
}

/// Every property, as one GetAll answers them (encoded with the Swift names: `enctl status --json`).
/// A property is one field here, declared with its name on the bus, in the interface's order; the
/// daemon serves it by that field (enagentd's `ExposureNotificationService.properties`).
public struct AgentProperties: BusProperties, Equatable, Encodable {
    @BusProperty("Enabled") public var enabled = false
    /// One of AgentStatus's raw values: active, paused, disabled, consent-required, …
    @BusProperty("Status") public var status = ""
    /// Unix seconds; 0 when not paused.
    @BusProperty("PausedUntil") public var pausedUntil: UInt64 = 0
    @BusProperty("Adapter") public var adapter = ""
    @BusProperty("Advertising") public var advertising = false
    @BusProperty("Scanning") public var scanning = false
    /// Unix seconds of the last successful detection; 0 for never.
    @BusProperty("LastDetection") public var lastDetection: UInt64 = 0
    /// The last detection's error; "" when it succeeded.
    @BusProperty("LastDetectionError") public var lastDetectionError = ""
    @BusProperty("SightingsStored") public var sightingsStored: UInt64 = 0
    /// The reminders due that tell nothing of exposure or diagnosis (GetHealthStatus has them all).
    @BusProperty("Reminders") public var reminders: [String] = []
    @BusProperty("Version") public var version = ""
    /// dB the daemon's detection adds to every RSSI of an adapter the configuration does not name
    /// (enagent.conf's rssi-correction).
    @BusProperty("RssiCorrection") public var rssiCorrection: Int32 = 0
    /// The adapter in use and every adapter the configuration names (rssi-correction.ADDRESS), each
    /// with the correction its sightings get.
    @BusProperty("AdapterRssiCorrections") public var adapterRssiCorrections: [AdapterRssiCorrection] = []

    public init() {}
}
