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
    /// What each file matched held besides its keys, in order.
    public var files: [KeyFileSummary]

    public init(matches: [KeyMatch] = [], revokedKeys: [TemporaryExposureKey.Identity] = [], keysChecked: Int = 0, implausibleSightings: Int = 0,
                files: [KeyFileSummary] = []) {
        (self.matches, self.revokedKeys, self.keysChecked, self.implausibleSightings) = (matches, revokedKeys, keysChecked, implausibleSightings)
        self.files = files
    }

    /// Adds what files published after these found: a key `later` matched or revoked takes the
    /// place of what this result held for it, as if all the files had been matched at once.
    public mutating func append(_ later: DetectionResult) {
        let renewed = Set(later.matches.map(\.key.key.identity) + later.revokedKeys)
        matches = matches.filter { !renewed.contains($0.key.key.identity) } + later.matches
        revokedKeys = revokedKeys.filter { !renewed.contains($0) } + later.revokedKeys
        keysChecked += later.keysChecked
        implausibleSightings += later.implausibleSightings
        files += later.files
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
/// The files stream (`KeyFileStream`): every worker takes the next batch of keys from the file
/// being read itself, so reading overlaps with matching and no thread waits for a batch to finish;
/// memory holds a few batches of keys, one file's reading buffers and what matched, however many
/// keys the files carry. A worker matches its batch day by day (servers shuffle the keys of a
/// file), so that lookups go to one day's filter while it is in the cache.
///
/// A file is only known good once it was read to its end (its size, CRC-32 and signature are
/// checked there): keys are matched as they come, but a file refused at its end, or by `accept`,
/// fails the whole detection, so nothing from it is ever reported.
public struct ExposureDetector: Sendable {
    /// Keys a worker takes at a time, and matches sorted by day. Large, so that a day's filter
    /// loaded into the cache serves many keys: a day of 4 million sightings has a filter of about
    /// 11,000 cache lines, and 512 keys of 13 days (5,700 lookups a day) found three quarters of
    /// them missing; 16,384 keys a batch (180,000 lookups a day) took 30 % less CPU time in all
    /// (`make bench`'s 1M keys × 4M sightings). A batch's keys are 1 MB at most.
    public static let batchSize = 16_384

    /// A key file for a detection: opened when the detection reaches it (so files are read one
    /// at a time), read as a stream, and judged by `accept` once read to its end, before the next
    /// file opens and before anything of the detection is reported.
    public struct File: Sendable {
        public let name: String
        /// Whether its keys are matched; a file processed before is read and checked, not matched.
        public let matched: Bool
        let open: @Sendable () throws -> KeyFileStream
        let accept: @Sendable (KeyFileSummary) throws -> Void

        /// `open` and `accept` may throw errors of their own, which the detection throws as they
        /// are; a `KeyFileError` of the file is a `KeyFileRefusal` naming it.
        public init(name: String, matched: Bool = true, open: @escaping @Sendable () throws -> KeyFileStream,
                    accept: @escaping @Sendable (KeyFileSummary) throws -> Void = { _ in }) {
            (self.name, self.matched, self.open, self.accept) = (name, matched, open, accept)
        }

        /// A file read whole before (tests, the fuzzer), read again as a stream.
        public init(_ export: KeyExport, name: String = "key file") {
            self.init(name: name) { try export.stream() }
        }

        /// Reads the file to its end without handing out its keys, and judges it: a file not to
        /// be matched is checked as one to be matched is.
        public func check() throws {
            do {
                let stream = try open()
                while try stream.next() != nil {}
                try accept(stream.summary)
            } catch let error as KeyFileError {
                throw KeyFileRefusal(name: name, error: error)
            }
        }
    }

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

    /// The keys of a detection's files, as `detect` takes them: one may read some ahead while
    /// the detection's index is still being built, on a core that would wait for it.
    public struct Keys: Sendable {
        fileprivate let cursor: KeyCursor

        public init(_ files: [File], cancellation: CancellationFlag? = nil) {
            cursor = KeyCursor(files, cancellation: cancellation)
        }

        /// Reads batches of keys on this thread while `keepReading` says so, at most
        /// `readAheadBatches` of them (memory holds them until the detection takes them). A file
        /// refused meanwhile stops the reading, and the detection throws its refusal.
        public func readAhead(while keepReading: () -> Bool) {
            cursor.readAhead(batches: ExposureDetector.readAheadBatches, while: keepReading)
        }
    }

    /// The batches `Keys.readAhead` reads at most: 131,072 keys, some 5 MB; in `make bench`'s
    /// 500k keys × 100k sightings their index takes longer than that to build.
    public static let readAheadBatches = 8

    /// `progress`, when given, is called from the workers with the number of keys taken so far,
    /// every `batchSize` keys. Once `cancellation` is set, the workers stop within a batch and
    /// the call throws CancellationError. A file refused throws its `KeyFileRefusal` (or what its
    /// `open` or `accept` threw), the first in file order, and nothing is returned of any file.
    public func detect(_ files: [File], progress: (@Sendable (Int) -> Void)? = nil,
                       cancellation: CancellationFlag? = nil) throws -> DetectionResult {
        try detect(Keys(files, cancellation: cancellation), progress: progress)
    }

    /// `detect` of keys some of which may have been read ahead; cancelled by their `cancellation`.
    public func detect(_ keys: Keys, progress: (@Sendable (Int) -> Void)? = nil) throws -> DetectionResult {
        let matchers = try (0..<threads).map { _ in try KeyMatcher(index: index, rssiCorrections: rssiCorrections) }
        let cursor = keys.cursor
        // Each worker initialises only its own slot and uses only its own matcher.
        let shares = UnsafeMutableBufferPointer<Result<WorkerShare, any Error>>.allocate(capacity: threads)
        defer { shares.deinitialize().deallocate() }
        nonisolated(unsafe) let slots = shares, ownMatchers = matchers
        DispatchQueue.concurrentPerform(iterations: threads) { worker in
            (slots.baseAddress! + worker).initialize(to: Result { try Self.work(matcher: ownMatchers[worker], cursor: cursor, progress: progress) })
        }
        if cursor.isCancelled { throw CancellationError() }
        let read = try cursor.finished()
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
        var result = Self.newestPublications(workerShares, implausibleSightings: matchers.reduce(0) { $0 + $1.implausibleSightings })
        result.files = read
        return result
    }

    /// Files read whole before, each read again as a stream (tests, the fuzzer).
    public func detect(_ exports: [KeyExport], progress: (@Sendable (Int) -> Void)? = nil,
                       cancellation: CancellationFlag? = nil) throws -> DetectionResult {
        try detect(exports.map { File($0) }, progress: progress, cancellation: cancellation)
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
        var share = WorkerShare(), keys = [DiagnosisKey]()
        keys.reserveCapacity(batchSize)
        while let first = cursor.next(batchSize, into: &keys) {
            progress?(first + keys.count)
            for offset in dayOrder(keys) {
                let key = keys[offset]
                if key.reportType == .revoked {
                    share.revocations.append((first + offset, key))
                } else if let candidates = try matcher.candidates(of: key) {
                    share.candidates.append((first + offset, key, candidates))
                }
            }
            share.checked += keys.count
            keys.removeAll(keepingCapacity: true)
        }
        return share
    }

    /// The order in which a worker matches `keys`: day by day (the day of a key's first
    /// interval), so that its lookups go to one day's filter at a time. Counted into days (a
    /// comparison sort of a batch took 2 % of a detection's time), unless the keys span more days
    /// than a batch has keys.
    static func dayOrder(_ keys: [DiagnosisKey]) -> [Int] {
        let days = keys.map { Int($0.key.rollingStartIntervalNumber.rawValue / ENIntervalNumber.tekRollingPeriod) }
        guard let firstDay = days.min(), let lastDay = days.max(), lastDay - firstDay < keys.count else {
            return keys.indices.sorted { days[$0] < days[$1] }
        }
        // Where each day's keys begin in the order, then each key in its day's place.
        var starts = [Int](repeating: 0, count: lastDay - firstDay + 2)
        for day in days { starts[day - firstDay + 1] += 1 }
        for index in 1..<starts.count { starts[index] += starts[index - 1] }
        var order = [Int](repeating: 0, count: keys.count)
        for (offset, day) in days.enumerated() {
            order[starts[day - firstDay]] = offset
            starts[day - firstDay] += 1
        }
        return order
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

/// A key file refused during a detection: its name, and what is wrong with it.
public struct KeyFileRefusal: Error, Equatable, CustomStringConvertible {
    public let name: String
    public let error: KeyFileError

    public var description: String { "\(name): \(error)" }
}

/// The keys of a list of files, streamed a batch at a time to whichever worker asks, each batch
/// with the place of its first key (publications are numbered in file order); those read ahead
/// first. One file is open at a time; the first refusal stops the handing out, and `finished`
/// throws it.
private final class KeyCursor: Sendable {
    private struct Place {
        var file = 0
        /// The file being read.
        var stream: KeyFileStream?
        var position = 0
        var failure: (any Error)?
        var read = [KeyFileSummary]()
        /// Batches read ahead, each with its first key's place, in order.
        var readAhead = [(first: Int, keys: [DiagnosisKey])]()
    }

    private let files: [ExposureDetector.File]
    private let cancellation: CancellationFlag?
    private let place = Mutex(Place())

    init(_ files: [ExposureDetector.File], cancellation: CancellationFlag?) {
        self.files = files
        self.cancellation = cancellation
    }

    var isCancelled: Bool { cancellation?.isSet == true }

    /// Fills `keys` (empty) with up to `limit` keys and returns the first one's place, or nil when
    /// every key has been handed out, a file was refused or the work is cancelled.
    func next(_ limit: Int, into keys: inout [DiagnosisKey]) -> Int? {
        if isCancelled { return nil }
        return place.withLock { place in
            guard place.failure == nil else { return nil }
            if !place.readAhead.isEmpty {
                let batch = place.readAhead.removeFirst()
                keys = batch.keys
                return batch.first
            }
            return read(limit, into: &keys, place: &place)
        }
    }

    /// Reads up to `batches` batches into memory while `keepReading` says so.
    func readAhead(batches: Int, while keepReading: () -> Bool) {
        while keepReading(), !isCancelled {
            let more = place.withLock { place in
                guard place.failure == nil, place.readAhead.count < batches else { return false }
                var keys = [DiagnosisKey]()
                keys.reserveCapacity(ExposureDetector.batchSize)
                guard let first = read(ExposureDetector.batchSize, into: &keys, place: &place) else { return false }
                place.readAhead.append((first, keys))
                return true
            }
            if !more { return }
        }
    }

    /// Reads the next keys from the files, up to `limit`, into `keys`; their first's place.
    private func read(_ limit: Int, into keys: inout [DiagnosisKey], place: inout Place) -> Int? {
        while keys.count < limit, place.file < files.count {
            let file = files[place.file]
            do {
                if file.matched {
                    let stream = try place.stream ?? file.open()
                    place.stream = stream
                    if try stream.nextKeys(limit - keys.count, into: &keys) { continue }
                    // Read to its end and found whole.
                    try file.accept(stream.summary)
                    place.read.append(stream.summary)
                } else {
                    try file.check()
                }
            } catch let error as KeyFileError {
                place.failure = KeyFileRefusal(name: file.name, error: error)
            } catch {
                place.failure = error
            }
            place.stream = nil
            if place.failure != nil { return nil }
            place.file += 1
        }
        guard !keys.isEmpty else { return nil }
        defer { place.position += keys.count }
        return place.position
    }

    /// The summaries of the files matched, once the workers are done; or the refusal that stopped them.
    func finished() throws -> [KeyFileSummary] {
        try place.withLock { place in
            if let failure = place.failure { throw failure }
            return place.read
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
    /// Matches `files` and groups the matches into exposure windows under `configuration`,
    /// ordered by day, then by key.
    public func exposureWindows(of files: [File], configuration: ExposureConfigurationV2) throws
        -> (result: DetectionResult, windows: [ExposureWindow]) {
        try exposureWindows(of: Keys(files), configuration: configuration)
    }

    /// `exposureWindows(of:configuration:)` of keys some of which may have been read ahead.
    public func exposureWindows(of keys: Keys, configuration: ExposureConfigurationV2) throws
        -> (result: DetectionResult, windows: [ExposureWindow]) {
        let result = try detect(keys)
        return (result, result.exposureWindows(configuration: configuration))
    }
}
