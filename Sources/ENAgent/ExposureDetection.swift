import ENCore
import ENKeyFiles
import ENStore
import Foundation

/// Why a detection run was refused. Nothing is recorded as processed when it fails.
public enum DetectionError: Error, Equatable, CustomStringConvertible {
    case badKeyFile(name: String, reason: String)
    case unverified(name: String, status: SignatureStatus)
    case badConfiguration(String)
    case store(String)

    public var description: String {
        switch self {
        case .badKeyFile(let name, let reason): return "\(name): \(reason)"
        case .unverified(let name, let status):
            return "\(name): the signature is \(status.rawValue); only files signed with a trusted key (see trusted-keys-directory) are used"
        case .badConfiguration(let reason): return "the exposure configuration is unusable: \(reason)"
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
}

/// Exposure detection inside the agent: key files given as data (the daemon never opens a
/// user's path), trusted keys from the configuration, sightings and results in the store.
public struct ExposureDetection: Sendable {
    public let store: AgentStore
    public let clock: any AgentClock
    public let trustedKeys: [TrustedKey]
    /// dB added to every sighting's RSSI: the adapter's receive calibration (enagent.conf's `rssi-correction`).
    public let rssiCorrection: Int
    public var limits = KeyFileLimits.standard

    /// The setting that keeps the configuration of the latest detection (for GetExposureInfo).
    public static let configurationSetting = "exposure-configuration"

    public init(store: AgentStore, clock: any AgentClock, trustedKeys: [TrustedKey], rssiCorrection: Int = 0) {
        self.store = store
        self.clock = clock
        self.trustedKeys = trustedKeys
        self.rssiCorrection = rssiCorrection
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

    /// Verifies every file first (one bad file refuses the whole run), then matches the new ones.
    public func detect(files: [(name: String, data: Data)], configurationJSON: String) throws(DetectionError) -> DetectionOutcome {
        let started = clock.now
        do {
            return try run(files: files, configurationJSON: configurationJSON, started: started)
        } catch {
            try? store.recordFailedDetection(startedAt: started, error: error.description)
            throw error
        }
    }

    private func run(files: [(name: String, data: Data)], configurationJSON: String, started: Int64) throws(DetectionError) -> DetectionOutcome {
        let configuration = try Self.configuration(configurationJSON)
        var fresh = [(name: String, digest: [UInt8], export: KeyExport)]()
        var skipped = 0
        for file in files {
            guard file.data.count <= limits.maximumFileSize else {
                throw .badKeyFile(name: file.name, reason: "\(KeyFileError.tooLarge(bytes: file.data.count, limit: limits.maximumFileSize))")
            }
            let export: KeyExport
            do { export = try KeyExport(contentsOf: file.data, limits: limits) } catch { throw .badKeyFile(name: file.name, reason: "\(error)") }
            let status = export.signatureStatus(trustedKeys: trustedKeys)
            guard status == .verified else { throw .unverified(name: file.name, status: status) }
            let digest = SHA256.digest(file.data)
            if try storeCall({ try store.hasProcessedKeyFile(sha256: digest) }) || fresh.contains(where: { $0.digest == digest }) {
                skipped += 1
            } else {
                fresh.append((file.name, digest, export))
            }
        }
        let detector = ExposureDetector(index: try storeCall { try store.sightingIndex() }, rssiCorrection: rssiCorrection)
        let found: (result: DetectionResult, windows: [ExposureWindow])
        do { found = try detector.exposureWindows(of: fresh.map(\.export), configuration: configuration.v2) } catch {
            throw .badKeyFile(name: fresh.map(\.name).joined(separator: ", "), reason: "\(error)")
        }
        let finished = clock.now
        try storeCall {
            try store.recordDetection(startedAt: started, finishedAt: finished,
                                      keyFiles: fresh.map { ProcessedKeyFile(sha256: $0.digest, name: $0.name, region: $0.export.region, keyCount: $0.export.keyCount) },
                                      matchedKeyCount: found.result.matches.count, windows: found.windows,
                                      superseding: found.result.matches.map(\.key.key.identity) + found.result.revokedKeys)
            try store.setSetting(Self.configurationSetting, to: configurationJSON)
        }
        return DetectionOutcome(keyFilesProcessed: fresh.count, keyFilesSkipped: skipped, keysChecked: found.result.keysChecked,
                                matchedKeyCount: found.result.matches.count, newWindows: found.windows)
    }

    private func storeCall<T>(_ body: () throws -> T) throws(DetectionError) -> T {
        do { return try body() } catch { throw .store("\(error)") }
    }
}
