import Dispatch
import ENCore
import FoundationEssentials
import Synchronization

/// What matching a set of key files found.
public struct DetectionResult: Sendable {
    /// One entry per matched key, with its newest publication's metadata (a key published twice,
    /// or revised, counts once), in file order.
    public var matches: [KeyMatch]
    /// Keys whose newest publication in these files revokes them: whatever an earlier detection
    /// found for them no longer counts.
    public var revokedKeys: [TemporaryExposureKey.Identity]
    /// Publications checked: keys and revised keys.
    public var keysChecked: Int
    /// Sightings that matched but carried an implausible TX power.
    public var implausibleSightings: Int

    public init(matches: [KeyMatch] = [], revokedKeys: [TemporaryExposureKey.Identity] = [], keysChecked: Int = 0, implausibleSightings: Int = 0) {
        (self.matches, self.revokedKeys, self.keysChecked, self.implausibleSightings) = (matches, revokedKeys, keysChecked, implausibleSightings)
    }

    /// Adds what files published after these found: a key `later` matched or revoked takes the
    /// place of what this result held for it, as if all the files had been matched at once.
    public mutating func append(_ later: DetectionResult) {
        let renewed = Set(later.matches.map(\.key.key.identity) + later.revokedKeys)
        matches = matches.filter { !renewed.contains($0.key.key.identity) } + later.matches
        revokedKeys = revokedKeys.filter { !renewed.contains($0) } + later.revokedKeys
        keysChecked += later.keysChecked
        implausibleSightings += later.implausibleSightings
    }

    /// The matches grouped into exposure windows under `configuration`, ordered by day, then by key.
    public func exposureWindows(configuration: ExposureConfigurationV2) -> [ExposureWindow] {
        matches.flatMap { ExposureWindowing.windows(for: $0, configuration: configuration) }
            .sorted { ($0.date, $0.diagnosisKey.key.rollingStartIntervalNumber) < ($1.date, $1.diagnosisKey.key.rollingStartIntervalNumber) }
    }
}

/// Matches diagnosis key files against a sighting index on all cores.
///
/// In two stages (`KeyMatcher`): the workers find, for each key, the sightings of its RPIs that
/// count by their time, from the index's RPIs and times alone; then the details of all they
/// found are read at once (from the agent database by row id, for an index read from it), and
/// the few keys with candidates are matched on, on one thread.
///
/// Every worker takes the next few hundred keys from the files itself, so reading the files
/// overlaps with matching and no thread waits for a batch to finish; memory holds the files and
/// what matched, however many keys they carry. A worker matches its batch day by day (servers
/// shuffle the keys of a file), so that lookups go to one day's filter while it is in the cache.
public struct ExposureDetector: Sendable {
    /// Keys a worker takes at a time, and matches sorted by day. Large, so that a day's filter
    /// loaded into the cache serves many keys: a day of 4 million sightings has a filter of about
    /// 11,000 cache lines, and 512 keys of 13 days (5,700 lookups a day) found three quarters of
    /// them missing; 16,384 keys a batch (180,000 lookups a day) took 30 % less CPU time in all
    /// (`make bench`'s 1M keys × 4M sightings). A batch's keys are 1 MB at most.
    public static let batchSize = 16_384

    public let index: MatchingIndex
    public var rssiCorrections: RssiCorrections
    public var threads: Int

    public init(index: MatchingIndex, rssiCorrections: RssiCorrections = RssiCorrections(),
                threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.index = index
        self.rssiCorrections = rssiCorrections
        self.threads = max(1, threads)
    }

    public init(index: SightingIndex, rssiCorrections: RssiCorrections = RssiCorrections(),
                threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.init(index: MatchingIndex(index), rssiCorrections: rssiCorrections, threads: threads)
    }

    /// `progress`, when given, is called from the workers with the number of keys taken so far,
    /// every `batchSize` keys. Once `cancellation` is set, the workers stop within a batch and
    /// the call throws CancellationError.
    public func detect(_ exports: [KeyExport], progress: (@Sendable (Int) -> Void)? = nil,
                       cancellation: CancellationFlag? = nil) throws -> DetectionResult {
        let matchers = try (0..<threads).map { _ in try KeyMatcher(index: index, rssiCorrections: rssiCorrections) }
        let cursor = KeyCursor(exports, cancellation: cancellation)
        // Each worker initialises only its own slot and uses only its own matcher.
        let shares = UnsafeMutableBufferPointer<Result<WorkerShare, any Error>>.allocate(capacity: threads)
        defer { shares.deinitialize().deallocate() }
        nonisolated(unsafe) let slots = shares, ownMatchers = matchers
        DispatchQueue.concurrentPerform(iterations: threads) { worker in
            (slots.baseAddress! + worker).initialize(to: Result { try Self.work(matcher: ownMatchers[worker], cursor: cursor, progress: progress) })
        }
        if cancellation?.isSet == true { throw CancellationError() }
        var workerShares = try shares.map { try $0.get() }
        // The second stage, once for every candidate the workers found: their details read
        // together (from the database, by row, for an index read from it), then each key
        // whose RPIs were seen matched on.
        let details = try index.sightings.details(of: workerShares.flatMap { $0.candidates.flatMap { $0.candidates.map(\.sighting) } })
        for worker in workerShares.indices {
            for found in workerShares[worker].candidates {
                if let match = try matchers[0].match(found.key, candidates: found.candidates, details: details) {
                    workerShares[worker].matches.append((found.position, match))
                }
            }
        }
        return Self.newestPublications(workerShares, implausibleSightings: matchers.reduce(0) { $0 + $1.implausibleSightings })
    }

    /// What one worker found, each publication numbered by its place in the files.
    private struct WorkerShare {
        /// The keys whose RPIs the index holds, with what matching's first stage found of them.
        var candidates = [(position: Int, key: DiagnosisKey, candidates: [KeyMatcher.Candidate])]()
        var matches = [(position: Int, match: KeyMatch)]()
        var revocations = [(position: Int, key: DiagnosisKey)]()
        var checked = 0
    }

    private static func work(matcher: KeyMatcher, cursor: KeyCursor, progress: (@Sendable (Int) -> Void)?) throws -> WorkerShare {
        var share = WorkerShare(), batch = [KeyExport.EncodedKey](), keys = [DiagnosisKey]()
        batch.reserveCapacity(batchSize)
        keys.reserveCapacity(batchSize)
        while let first = cursor.next(batchSize, into: &batch) {
            progress?(first + batch.count)
            keys.append(contentsOf: batch.lazy.map { $0.decode() })
            for offset in keys.indices.sorted(by: { keys[$0].key.rollingStartIntervalNumber < keys[$1].key.rollingStartIntervalNumber }) {
                let key = keys[offset]
                if key.reportType == .revoked {
                    share.revocations.append((first + offset, key))
                } else if let candidates = try matcher.candidates(of: key) {
                    share.candidates.append((first + offset, key, candidates))
                }
            }
            share.checked += batch.count
            batch.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
        }
        return share
    }

    /// One result per key: its newest publication wins, and a newest one that revokes it drops it.
    private static func newestPublications(_ shares: [WorkerShare], implausibleSightings: Int) -> DetectionResult {
        var newestMatch = [TemporaryExposureKey.Identity: (position: Int, match: KeyMatch)]()
        var newestRevocation = [TemporaryExposureKey.Identity: Int]()
        for share in shares {
            for found in share.matches where found.position > newestMatch[found.match.key.key.identity]?.position ?? -1 {
                newestMatch[found.match.key.key.identity] = found
            }
            for revocation in share.revocations where revocation.position > newestRevocation[revocation.key.key.identity] ?? -1 {
                newestRevocation[revocation.key.key.identity] = revocation.position
            }
        }
        let matches = newestMatch.values.filter { $0.position > newestRevocation[$0.match.key.key.identity] ?? -1 }
            .sorted { $0.position < $1.position }.map(\.match)
        let revoked = newestRevocation.filter { $0.value > newestMatch[$0.key]?.position ?? -1 }.sorted { $0.value < $1.value }.map(\.key)
        return DetectionResult(matches: matches, revokedKeys: revoked, keysChecked: shares.reduce(0) { $0 + $1.checked },
                               implausibleSightings: implausibleSightings)
    }
}

/// The keys of a list of files, handed out a batch at a time to whichever worker asks, each
/// batch with the place of its first key (publications are numbered in file order).
private final class KeyCursor: Sendable {
    private struct Place {
        var file = 0
        var offset: Int? = KeyExport.firstFieldOffset
        var position = 0
    }

    private let exports: [KeyExport]
    private let cancellation: CancellationFlag?
    private let place = Mutex(Place())

    init(_ exports: [KeyExport], cancellation: CancellationFlag?) {
        self.exports = exports
        self.cancellation = cancellation
    }

    /// Fills `batch` with up to `limit` keys and returns the first one's place, or nil when every
    /// key has been handed out or the work is cancelled.
    func next(_ limit: Int, into batch: inout [KeyExport.EncodedKey]) -> Int? {
        if cancellation?.isSet == true { return nil }
        return place.withLock { place in
            while batch.count < limit, place.file < exports.count {
                place.offset = exports[place.file].encodedKeys(from: place.offset!, limit: limit - batch.count, into: &batch)
                if place.offset == nil { place.file += 1; place.offset = KeyExport.firstFieldOffset }
            }
            guard !batch.isEmpty else { return nil }
            defer { place.position += batch.count }
            return place.position
        }
    }
}

/// Set once, from any thread, to stop a detection.
public final class CancellationFlag: Sendable {
    private let flag = Atomic(false)
    public init() {}
    public func set() { flag.store(true, ordering: .relaxed) }
    public var isSet: Bool { flag.load(ordering: .relaxed) }
}

extension ExposureDetector {
    /// Matches `exports` and groups the matches into exposure windows under `configuration`,
    /// ordered by day, then by key.
    public func exposureWindows(of exports: [KeyExport], configuration: ExposureConfigurationV2) throws
        -> (result: DetectionResult, windows: [ExposureWindow]) {
        let result = try detect(exports)
        return (result, result.exposureWindows(configuration: configuration))
    }
}
