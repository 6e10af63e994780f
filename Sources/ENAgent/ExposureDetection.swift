import ENCore
import ENKeyFiles
import ENStore
import FoundationEssentials
import Glibc

/// Why a detection run was refused. Nothing is recorded as processed when it fails.
public enum DetectionError: Error, Equatable, CustomStringConvertible {
    case badKeyFile(name: String, reason: String)
    case unverified(name: String, status: SignatureStatus)
    case badConfiguration(String)
    /// A key file could not be read (the message names it).
    case unreadable(String)
    /// A session's batch would take it past its maximum key count; nothing of the batch was used.
    case keyLimit(maximum: Int, checked: Int, batch: Int)
    /// The session was cancelled while the batch ran; nothing of the batch was used.
    case cancelled
    case store(String)

    public var description: String {
        switch self {
        case .badKeyFile(let name, let reason): return "\(name): \(reason)"
        case .unverified(let name, let status):
            return "\(name): the signature is \(status.rawValue); only files signed with a trusted key (see trusted-keys-directory) are used"
        case .badConfiguration(let reason): return "the exposure configuration is unusable: \(reason)"
        case .keyLimit(let maximum, let checked, let batch):
            return "the batch's \(batch) keys would take the session past its maximum of \(maximum) keys (\(checked) checked so far); nothing of the batch was used"
        case .unreadable(let reason): return reason
        case .cancelled: return "the detection session was cancelled"
        case .store(let reason): return reason
        }
    }
}

/// What one detection run found.
public struct DetectionOutcome: Sendable, Equatable {
    public var keyFilesProcessed: Int
    /// Files skipped because one with the same SHA-256 was processed before.
    public var keyFilesSkipped: Int
    public var keysChecked: Int
    public var matchedKeyCount: Int
    /// The exposure windows this run added.
    public var newWindows: [ExposureWindow]
    /// The verdict on every window stored, this run's included.
    public var assessment: RiskAssessment
    /// Whether the verdict asks for an alarm the one before did not (`RiskVerdict.alarms(after:)`).
    public var alarms: Bool
}

/// Where a detection's trusted keys come from: read when each session starts, so that a key
/// put in place after the agent started counts at the next detection, without a restart.
public struct TrustedKeySource: Sendable, ExpressibleByArrayLiteral {
    let load: @Sendable () throws -> [TrustedKey]

    /// `load` reads the keys; its error's description is the detection's error.
    public init(_ load: @escaping @Sendable () throws -> [TrustedKey]) { self.load = load }

    public init(arrayLiteral keys: TrustedKey...) { self.init { keys } }
}

/// Exposure detection inside the agent: key files given as data (the daemon never opens a
/// user's path), trusted keys from the configuration, sightings and results in the store.
public struct ExposureDetection: Sendable {
    public let store: AgentStore
    public let clock: any AgentClock
    public let trustedKeys: TrustedKeySource
    /// dB added to each sighting's RSSI: the receive calibration of the adapter that recorded it
    /// (enagent.conf's `rssi-correction` and `rssi-correction.ADDRESS`).
    public let rssiCorrections: RssiCorrections
    /// The health authority's rules for the verdict.
    public let riskConfiguration: RiskConfigurationSource
    public var limits = KeyFileLimits.standard

    public init(store: AgentStore, clock: any AgentClock, trustedKeys: TrustedKeySource, rssiCorrections: RssiCorrections = RssiCorrections(),
                riskConfiguration: RiskConfigurationSource = .standard) {
        self.store = store
        self.clock = clock
        self.trustedKeys = trustedKeys
        self.rssiCorrections = rssiCorrections
        self.riskConfiguration = riskConfiguration
    }

    /// Parses the configuration JSON (empty means the defaults).
    public static func configuration(_ json: String) throws(DetectionError) -> ExposureConfiguration {
        guard !json.allSatisfy(\.isWhitespace) else { return ExposureConfiguration() }
        do {
            return try JSONDecoder().decode(ExposureConfiguration.self, from: Data(json.utf8))
        } catch let error as ConfigurationError {
            throw .badConfiguration("\(error)")
        } catch {
            throw .badConfiguration("not a JSON object")
        }
    }

    /// Runs `body`; when it fails, the failure is the last detection's error (LastDetectionError).
    /// A cancellation is the client's choice, not a failure.
    fileprivate func recordingFailure<T>(startedAt: Int64, _ body: () throws(DetectionError) -> T) throws(DetectionError) -> T {
        do { return try body() } catch {
            // The caller gets `error` either way; a store that cannot record it only leaves
            // LastDetectionError as it was, and fails the next write that matters loudly.
            if error != .cancelled { try? store.recordFailedDetection(startedAt: startedAt, error: error.description) }
            throw error
        }
    }

    fileprivate func storeCall<T>(_ body: () throws -> T) throws(DetectionError) -> T {
        do { return try body() } catch { throw .store("\(error)") }
    }
}

/// A key file for a detection session: its name (for errors) and how to open it. The session
/// streams each file when it reaches it (`KeyFileStream`), so a batch never holds a whole file,
/// however many keys it has.
public struct KeyFileSource: Sendable {
    public let name: String
    let open: @Sendable () throws(DetectionError) -> KeyFileContents

    public init(name: String, open: @escaping @Sendable () throws(DetectionError) -> KeyFileContents) {
        self.name = name
        self.open = open
    }

    public init(name: String, data: Data) {
        let contents = KeyFileContents(data)
        self.init(name: name) { contents }
    }
}

/// A detection that takes its key files in batches, as the Contact Tracing API's sessions do: a
/// client can stream hundreds of files without holding them all, and stop at a key budget.
/// Each batch's files stream through the matching, each verified at its end (one bad file
/// refuses the batch, and the session stays as it was); what the batches matched is stored once, by `finish`, as one
/// detection. A key counts once across the batches: the newest publication wins.
///
/// The sightings are those stored when the first new file arrives (the index is read then and
/// kept for the session; what each batch finds is read from its rows as the batch ends, so a
/// sighting that retention deleted meanwhile no longer counts).
public struct DetectionSession: Sendable {
    public let startedAt: Int64
    /// The most keys the session checks; nil for no limit.
    public let maximumKeys: Int?
    private let detection: ExposureDetection
    /// The detection's trusted keys as they were when the session started.
    private let trustedKeys: [TrustedKey]
    private let configurationJSON: String
    private let configuration: ExposureConfiguration
    private var index: MatchingIndex?
    private var fresh = [ProcessedKeyFile]()
    private var digests = Set<[UInt8]>()
    private var result = DetectionResult()
    /// Files handed to the session, new or not: the next file is "key file \(filesReceived + 1)".
    public private(set) var filesReceived = 0
    /// Files skipped because one with the same SHA-256 was processed before.
    public private(set) var keyFilesSkipped = 0

    public var keyFilesProcessed: Int { fresh.count }
    public var keysChecked: Int { result.keysChecked }
    public var matchedKeyCount: Int { result.matches.count }

    public init(detection: ExposureDetection, configurationJSON: String, maximumKeys: Int? = nil) throws(DetectionError) {
        let startedAt = detection.clock.now
        (configuration, trustedKeys) = try detection.recordingFailure(startedAt: startedAt) { () throws(DetectionError) in
            let configuration = try ExposureDetection.configuration(configurationJSON)
            do { return (configuration, try detection.trustedKeys.load()) } catch { throw .unreadable("\(error)") }
        }
        (self.startedAt, self.detection, self.configurationJSON, self.maximumKeys) = (startedAt, detection, configurationJSON, maximumKeys)
    }

    /// Verifies the batch's files, then matches those not processed before. `progress` is called
    /// from the matching threads with the session's keys checked so far; setting `cancellation`
    /// stops the matching.
    public mutating func add(_ files: [KeyFileSource], progress: (@Sendable (Int) -> Void)? = nil,
                             cancellation: CancellationFlag? = nil) throws(DetectionError) {
        let detection = detection
        self = try detection.recordingFailure(startedAt: startedAt) { () throws(DetectionError) in
            try adding(files, progress: progress, cancellation: cancellation)
        }
    }

    /// The session with the batch added; `self` is left as it was when the batch is refused.
    ///
    /// Each file is hashed first (a pass over its bytes, a chunk at a time), to tell the files
    /// processed before, which are read and checked but not matched. Then the files stream through
    /// the detector: keys are matched as they come, and a file refused at its end (its signature
    /// among the checks) refuses the batch before anything of it is kept.
    private func adding(_ files: [KeyFileSource], progress: (@Sendable (Int) -> Void)?,
                        cancellation: CancellationFlag?) throws(DetectionError) -> DetectionSession {
        let limits = detection.limits, store = detection.store, trustedKeys = trustedKeys
        var next = self, streamed = [ExposureDetector.File](), freshDigests = [(digest: [UInt8], name: String)]()
        // The session's first batch reads the index of sightings on another core while the
        // files are hashed (as enctl reads its sightings while it opens the files): unused when
        // every file was processed before.
        let indexRead = next.index == nil ? BackgroundWork { MatchingIndex(try store.detectionIndex()) } : nil
        for file in files {
            let contents = try file.open(), name = file.name
            guard contents.size <= UInt64(limits.maximumFileSize) else {
                throw .badKeyFile(name: name, reason: "\(KeyFileError.tooLarge(bytes: Int(clamping: contents.size), limit: limits.maximumFileSize))")
            }
            let digest: [UInt8]
            do { digest = try contents.sha256() } catch { throw .badKeyFile(name: name, reason: "\(error)") }
            next.filesReceived += 1
            let seen = try detection.storeCall({ try store.hasProcessedKeyFile(sha256: digest) }) || !next.digests.insert(digest).inserted
            if seen { next.keyFilesSkipped += 1 } else { freshDigests.append((digest, name)) }
            streamed.append(ExposureDetector.File(name: name, matched: !seen, open: { try KeyFileStream(contents, limits: limits) }) { summary in
                let status = summary.signatureStatus(trustedKeys: trustedKeys)
                guard status == .verified else { throw DetectionError.unverified(name: name, status: status) }
            })
        }
        var batch = DetectionResult()
        do {
            if freshDigests.isEmpty {
                // Nothing to match: each file is still read and checked, as a new one would be.
                for file in streamed { try file.check() }
                return next
            }
            if let indexRead { next.index = try detection.storeCall { try indexRead.result() } }
            let checkedBefore = keysChecked
            let detector = ExposureDetector(index: next.index!, rssiCorrections: detection.rssiCorrections)
            var keysTaken: (@Sendable (Int) -> Void)?
            if let progress { keysTaken = { taken in progress(checkedBefore + taken) } }
            batch = try detector.detect(streamed, progress: keysTaken, cancellation: cancellation)
        } catch is CancellationError {
            throw .cancelled
        } catch let error as DetectionError {
            throw error
        } catch let refusal as KeyFileRefusal {
            throw .badKeyFile(name: refusal.name, reason: "\(refusal.error)")
        } catch let error as StoreError {
            // Reading the found sightings' rows failed: no fault of the files.
            throw .store("\(error)")
        } catch {
            throw .badKeyFile(name: freshDigests.map(\.name).joined(separator: ", "), reason: "\(error)")
        }
        let keys = batch.files.reduce(0) { $0 + $1.keyCount }
        if let maximumKeys, keysChecked + keys > maximumKeys {
            throw .keyLimit(maximum: maximumKeys, checked: keysChecked, batch: keys)
        }
        for (fresh, summary) in zip(freshDigests, batch.files) {
            next.fresh.append(ProcessedKeyFile(sha256: fresh.digest, name: fresh.name, region: summary.region, keyCount: summary.keyCount))
        }
        next.result.append(batch)
        return next
    }

    /// Stores what the batches found as one detection: the files as processed, the exposure
    /// windows and what v1 needs of each matched key (replacing those of earlier detections for
    /// the same keys), the configuration.
    public func finish() throws(DetectionError) -> DetectionOutcome {
        try detection.recordingFailure(startedAt: startedAt) { () throws(DetectionError) in
            let windows = result.exposureWindows(configuration: configuration.v2)
            // Whatever this configuration says of v1: GetExposureInfo scores them with the last
            // detection's, which may be a later one's. Keys of infectiousness NONE too, which
            // give no window: v1 knows no infectiousness (KeyExposureEvaluator.findExposures).
            let v1Matches = result.matches.map(V1Match.init).filter { !$0.sightings.isEmpty }
            let store = detection.store, finished = detection.clock.now
            let risk = detection.riskConfiguration.current(store: store)
            let recorded = try detection.storeCall {
                let recorded = try store.recordDetection(startedAt: startedAt, finishedAt: finished, keyFiles: fresh, matchedKeyCount: result.matches.count,
                                                         windows: windows, v1Matches: v1Matches,
                                                         superseding: result.matches.map(\.key.key.identity) + result.revokedKeys, risk: risk)
                try store.set(StoreSettings.exposureConfiguration, to: configurationJSON)
                return recorded
            }
            return DetectionOutcome(keyFilesProcessed: fresh.count, keyFilesSkipped: keyFilesSkipped, keysChecked: result.keysChecked,
                                    matchedKeyCount: result.matches.count, newWindows: windows, assessment: recorded.assessment,
                                    alarms: recorded.assessment.verdict.alarms(after: recorded.previousAssessment?.verdict))
        }
    }
}
