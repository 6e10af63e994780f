import Dispatch
import ENCore
import Foundation

/// What matching a set of key files found.
public struct DetectionResult: Sendable {
    /// One entry per matched key (a key published twice counts once), revisions applied.
    public var matches: [KeyMatch]
    public var keysChecked: Int
    /// Sightings that matched but carried an implausible TX power.
    public var implausibleSightings: Int
}

/// Matches diagnosis key files against a sighting index on all cores.
///
/// Keys are taken from each file in batches, so memory holds one batch of keys (plus the file),
/// however many keys a day brings.
public struct ExposureDetector: Sendable {
    public static let batchSize = 8_192

    public let index: SightingIndex
    public var rssiCorrection: Int
    public var threads: Int

    public init(index: SightingIndex, rssiCorrection: Int = 0, threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.index = index
        self.rssiCorrection = rssiCorrection
        self.threads = max(1, threads)
    }

    public func detect(_ exports: [KeyExport]) throws -> DetectionResult {
        let workers = try (0..<threads).map { _ in try KeyMatcher(index: index, rssiCorrection: rssiCorrection) }
        var matches = [KeyMatch](), revisions = [TemporaryExposureKeyData: DiagnosisKey]()
        var batch = [KeyExport.EncodedKey](), checked = 0
        batch.reserveCapacity(Self.batchSize)
        for export in exports {
            try export.forEachEncodedKey { encoded in
                if encoded.isRevision {
                    let revision = encoded.decode()
                    revisions[revision.key.keyData] = revision
                    return
                }
                batch.append(encoded)
                if batch.count == Self.batchSize {
                    matches += try match(batch, with: workers)
                    checked += batch.count
                    batch.removeAll(keepingCapacity: true)
                }
            }
        }
        matches += try match(batch, with: workers)
        checked += batch.count

        var seen = Set<TemporaryExposureKeyData>()
        let unique = matches.compactMap { match -> KeyMatch? in
            guard seen.insert(match.key.key.keyData).inserted else { return nil }
            guard let revision = revisions[match.key.key.keyData] else { return match }
            return KeyMatch(key: revision, sightings: match.sightings)
        }.filter { $0.key.reportType != .revoked }
        return DetectionResult(matches: unique, keysChecked: checked,
                               implausibleSightings: workers.reduce(0) { $0 + $1.implausibleSightings })
    }

    /// Splits `keys` into one contiguous share per worker, which decodes and matches it
    /// (revoked keys are skipped).
    private func match(_ keys: [KeyExport.EncodedKey], with workers: [KeyMatcher]) throws -> [KeyMatch] {
        guard !keys.isEmpty else { return [] }
        let count = workers.count
        // Each worker initialises only its own slot; the matchers are one per worker.
        let shares = UnsafeMutableBufferPointer<Result<[KeyMatch], any Error>>.allocate(capacity: count)
        defer { shares.deinitialize().deallocate() }
        nonisolated(unsafe) let slots = shares, matchers = workers
        DispatchQueue.concurrentPerform(iterations: count) { worker in
            let range = keys.count * worker / count..<keys.count * (worker + 1) / count
            (slots.baseAddress! + worker).initialize(to: Result {
                try keys[range].compactMap { encoded in
                    let key = encoded.decode()
                    return key.reportType == .revoked ? nil : try matchers[worker].match(key)
                }
            })
        }
        return try shares.flatMap { try $0.get() }
    }
}

extension ExposureDetector {
    /// Matches `exports` and groups the matches into exposure windows under `configuration`,
    /// ordered by day, then by key.
    public func exposureWindows(of exports: [KeyExport], configuration: ExposureConfigurationV2) throws
        -> (result: DetectionResult, windows: [ExposureWindow]) {
        let result = try detect(exports)
        let windows = result.matches.flatMap { ExposureWindowing.windows(for: $0, configuration: configuration) }
            .sorted { ($0.date, $0.diagnosisKey.key.rollingStartIntervalNumber) < ($1.date, $1.diagnosisKey.key.rollingStartIntervalNumber) }
        return (result, windows)
    }
}
