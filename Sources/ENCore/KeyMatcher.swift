/// A reception attributed to a diagnosis key, with what its AEM revealed.
public struct MatchedSighting: Hashable, Sendable {
    public var time: Int64
    public var rssi: Int8?
    public var metadata: Metadata
    /// TX power − (RSSI + the receiving adapter's correction), floored at 0; nil when the RSSI is unknown.
    public var attenuation: Int?
    /// Since the receiving device's previous scan.
    public var scanGap: ScanGap
    /// Whether it is the strongest sighting of its RPI in its scan (by its RSSI with the receiving
    /// adapter's correction), the one v1 counts.
    public var strongestOfItsScan: Bool

    public init(time: Int64, rssi: Int8?, metadata: Metadata, attenuation: Int?, scanGap: ScanGap = .unknown, strongestOfItsScan: Bool = true) {
        self.time = time
        self.rssi = rssi
        self.metadata = metadata
        self.attenuation = attenuation
        self.scanGap = scanGap
        self.strongestOfItsScan = strongestOfItsScan
    }
}

/// A diagnosis key and the receptions of its RPIs.
public struct KeyMatch: Hashable, Sendable {
    public var key: DiagnosisKey
    public var sightings: [MatchedSighting]

    public init(key: DiagnosisKey, sightings: [MatchedSighting]) {
        self.key = key
        self.sightings = sightings
    }
}

/// Finds the sightings of diagnosis keys (protocol.md §3) as Google's matching does
/// (docs/detection.md, "Matching as Google's code does it"). One per thread: it owns crypto contexts.
public final class KeyMatcher {
    /// An RPI counts when seen from this many intervals before its own to as many after
    /// (Google's RollingProximityIdValidator.isSightingValid, ContactTracingFeature.tkMatchingClockDriftRollingPeriods).
    public static let clockDriftIntervals: Int64 = 12
    /// So a key's sightings lie within its validity and this much either side.
    public static let validityTolerance: Int64 = clockDriftIntervals * ENIntervalNumber.secondsPerInterval
    /// Sightings of one RPI more than this after its first counted one are replays: no device
    /// broadcasts an RPI for longer than two intervals (ExposureMatchingTracer.getValidSightingsForRpi).
    public static let maximumRpiSightingSpan: Int64 = 2 * ENIntervalNumber.secondsPerInterval
    /// TX powers outside this range are implausible (as Google's matcher holds): such a sighting
    /// cannot be scored and is not counted.
    public static let plausibleTransmitPower: ClosedRange<Int8> = -50...20

    private let index: MatchingIndex
    private let crypto: ExposureCrypto
    private let rssiCorrections: RssiCorrections
    /// Per interval of the key being matched, a bit: whether the index may hold its RPI.
    private let candidates = UnsafeMutablePointer<UInt64>.allocate(capacity: KeyMatcher.candidateWords)
    private static let candidateWords = (Int(ENIntervalNumber.tekRollingPeriod) + 63) / 64
    /// Sightings dropped for an implausible TX power since this matcher was made.
    public private(set) var implausibleSightings = 0

    /// - Parameter rssiCorrections: the receive calibration of each adapter, added to the RSSIs it recorded.
    public init(index: MatchingIndex, rssiCorrections: RssiCorrections = RssiCorrections()) throws {
        self.index = index
        self.rssiCorrections = rssiCorrections
        crypto = try ExposureCrypto()
    }

    public convenience init(index: SightingIndex, rssiCorrections: RssiCorrections = RssiCorrections()) throws {
        try self.init(index: MatchingIndex(index), rssiCorrections: rssiCorrections)
    }

    deinit { candidates.deallocate() }

    /// The receptions of `key`'s RPIs that count, or nil when there are none: each RPI's within 12
    /// intervals of its own and 20 minutes of its first counted one. Both stages at once:
    /// `candidates(of:)`, the details of what it found, `match(_:candidates:details:)`.
    public func match(_ key: DiagnosisKey) throws -> KeyMatch? {
        guard let found = try candidates(of: key) else { return nil }
        return try match(key, candidates: found, details: try index.sightings.details(of: found.map(\.sighting)))
    }

    /// A sighting of one of a key's RPIs with a reception that may count by its time, as the
    /// first stage finds it.
    public struct Candidate: Sendable {
        public var sighting: SightingReference
        /// The sighting's time, its first reception's.
        public var time: Int64
        /// The interval whose RPI it is.
        public var interval: Int64
    }

    /// Matching's first stage, on the index's table alone (RPIs and times): the sightings of
    /// `key`'s RPIs that may hold a reception that counts by its time (one that began up to
    /// `SightingRecord.longestSpanSeconds` before the RPI's counted times may reach into them),
    /// each RPI's together, in time order; nil when there are none. The second stage, which
    /// knows each reception's time, keeps exactly those that count.
    public func candidates(of key: DiagnosisKey) throws -> [Candidate]? {
        // Google's ExposureMatchingTracer.traceWithJava skips RECURSIVE keys
        // (ContactTracingFeature.enableRecursiveTekReportType is false).
        guard key.reportType != .recursive else { return nil }
        let tek = key.key
        let validity = tek.rollingStartIntervalNumber.unixSeconds..<Int64(tek.rollingEndIntervalNumber) * ENIntervalNumber.secondsPerInterval
        let firstInterval = Int64(tek.rollingStartIntervalNumber.rawValue)
        // A rolling period is at most 144 (key files are checked so); no key is derived further.
        let count = min(Int(tek.rollingPeriod), Int(ENIntervalNumber.tekRollingPeriod))
        let rpik = crypto.rollingProximityIdentifierKey(for: tek.keyData)
        let found: [Candidate] = try index.withLookup(validity: validity) { lookup, filter, nextDay in
            try crypto.withRollingProximityIdentifiers(key: rpik, from: tek.rollingStartIntervalNumber, count: count) { blocks in
                // Two passes: every RPI's filter word is loaded before any is looked up further,
                // and the second visits only the few RPIs the filter let through.
                if let nextDay {
                    markCandidates(blocks, count: count) { filter.mayContain(low: $0) || nextDay.mayContain(low: $0) }
                } else {
                    markCandidates(blocks, count: count) { filter.mayContain(low: $0) }
                }
                let words = (count + 63) / 64
                var found = [Candidate]()
                for word in 0..<words {
                    var bits = candidates[word]
                    while bits != 0 {
                        let offset = word * 64 + bits.trailingZeroBitCount
                        let rpi = Bytes16(blocks, offset: offset * 16)
                        bits &= bits - 1
                        let interval = firstInterval + Int64(offset)
                        let counted = Self.countedTimes(ofRPIOf: interval)
                        let reaching = (counted.lowerBound - SightingRecord.longestSpanSeconds)..<counted.upperBound
                        let rpiStart = found.count
                        lookup.forEachSighting(of: rpi) { time, reference in
                            if reaching.contains(time) {
                                found.append(Candidate(sighting: SightingReference(reference: reference, rpi: rpi), time: time, interval: interval))
                            }
                        }
                        found[rpiStart...].sort { $0.time < $1.time }
                    }
                }
                return found
            }
        }
        return found.isEmpty ? nil : found
    }

    /// Matching's second stage, for a key whose first stage found `candidates`: each sighting's
    /// receptions, of each RPI those that count (within its 12 intervals, and 20 minutes of its
    /// first counted one: Google's ExposureMatchingTracer.getValidSightingsForRpi), the strongest
    /// of each scan marked (by corrected RSSI), the AEMs decrypted, implausible TX powers dropped,
    /// attenuations with the receiving adapter's correction, in time order. `details` holds each
    /// candidate's (`SightingIndex.details(of:)`); one without (its row deleted since the index
    /// was read) does not count.
    public func match(_ key: DiagnosisKey, candidates: [Candidate], details: [SightingReference: SightingDetails]) throws -> KeyMatch? {
        var counted = [Counted]()
        counted.reserveCapacity(candidates.count)
        var start = 0
        while start < candidates.count {
            let rpi = candidates[start].sighting.rpi
            let countedTimes = Self.countedTimes(ofRPIOf: candidates[start].interval)
            var end = start + 1
            while end < candidates.count, candidates[end].sighting.rpi == rpi { end += 1 }
            let rpiStart = counted.count
            for candidate in candidates[start..<end] {
                guard let found = details[candidate.sighting] else { continue }
                for reception in found.receptions {
                    let time = candidate.time + Int64(reception.heard.secondsAfterFirst)
                    if countedTimes.contains(time) {
                        counted.append(Counted(rpi: rpi, time: time, aem: found.aem, rssi: reception.heard.rssi, adapterAddress: found.adapterAddress,
                                               scanGap: reception.scanGap))
                    }
                }
            }
            Self.cutToSpan(&counted, from: rpiStart)
            markStrongest(&counted, from: rpiStart)
            start = end
        }
        guard !counted.isEmpty else { return nil }
        let aemk = crypto.associatedEncryptedMetadataKey(for: key.key.keyData)
        var matched = [MatchedSighting]()
        for sighting in counted {
            let metadata = try crypto.decryptMetadata(sighting.aem, key: aemk, rpi: sighting.rpi)
            guard Self.plausibleTransmitPower.contains(metadata.transmitPower) else {
                implausibleSightings += 1
                continue
            }
            let correction = rssiCorrections.correction(for: sighting.adapterAddress)
            let attenuation = sighting.rssi.map { max(0, Int(metadata.transmitPower) - (Int($0) + correction)) }
            matched.append(MatchedSighting(time: sighting.time, rssi: sighting.rssi, metadata: metadata, attenuation: attenuation,
                                           scanGap: sighting.scanGap, strongestOfItsScan: sighting.strongestOfScan))
        }
        guard !matched.isEmpty else { return nil }
        matched.sort { ($0.time, $0.attenuation ?? -1, $0.metadata.transmitPower) < ($1.time, $1.attenuation ?? -1, $1.metadata.transmitPower) }
        return KeyMatch(key: key, sightings: matched)
    }

    /// When a sighting of the RPI of `interval` counts: from 12 intervals before it to the end of
    /// the 12th after (RollingProximityIdValidator.getValidWindowStartIntervalNumber and
    /// getValidWindowEndIntervalNumber; not clamped to the key's end, as
    /// ContactTracingFeature.ignoreEmbargoPeriodWhenMatchingNearKeyEdges is false).
    @inline(__always)
    static func countedTimes(ofRPIOf interval: Int64) -> Range<Int64> {
        (interval - clockDriftIntervals) * ENIntervalNumber.secondsPerInterval..<(interval + clockDriftIntervals + 1) * ENIntervalNumber.secondsPerInterval
    }

    /// A reception of one of the key's RPIs that counts, with what it is weighed by.
    struct Counted {
        var rpi: RollingProximityIdentifier
        var time: Int64
        var aem: AssociatedEncryptedMetadata
        var rssi: Int8?
        var adapterAddress: BluetoothAddress?
        var scanGap: ScanGap
        var strongestOfScan = false
    }

    /// Cuts `found[start...]`, one RPI's counted receptions, as Google's
    /// ExposureMatchingTracer.getValidSightingsForRpi does: in time order, without those more
    /// than `maximumRpiSightingSpan` after the first.
    static func cutToSpan(_ found: inout [Counted], from start: Int) {
        guard found.count > start else { return }
        found[start...].sort { $0.time < $1.time }
        let first = found[start].time
        var end = found.count
        while found[end - 1].time - first > maximumRpiSightingSpan { end -= 1 }
        found.removeLast(found.count - end)
    }

    /// Marks in `found[start...]`, one RPI's counted receptions in time order, the strongest of
    /// each scan (the first of equals; the aggregation v1 counts,
    /// ContactTracingFeature.aggregateSightingsFromSingleScan). Strongest by the RSSI with its
    /// adapter's correction: Google compares the RSSIs it stored (ExposureMatchingTracer
    /// .getValidSightingsForRpi), which are calibrated as they are stored
    /// (ble/scanner/BleScannerImpl.BleSightingCallback.getAdjustedRssi: the RSSI + rssiOffset), so
    /// of two adapters that heard one scan the one whose corrected RSSI is higher wins, whichever
    /// reported more.
    private func markStrongest(_ found: inout [Counted], from start: Int) {
        guard found.count > start else { return }
        func strength(_ index: Int) -> Int {
            let reception = found[index]
            return reception.rssi.map { Int($0) + rssiCorrections.correction(for: reception.adapterAddress) } ?? Int.min
        }
        var strongest = start
        for index in start + 1..<found.count {
            if !ExposureWindowing.sameScan(gap: found[index].time - found[index - 1].time) {
                found[strongest].strongestOfScan = true
                strongest = index
            } else if strength(index) > strength(strongest) {
                strongest = index
            }
        }
        found[strongest].strongestOfScan = true
    }

    /// Sets a bit in `candidates` for each of the `count` RPIs in `blocks` that `mayContain`
    /// (given each RPI's low half). It runs for every RPI of every key: raw loads and wrapping
    /// arithmetic, the bounds checked once before the loop.
    @inline(__always)
    private func markCandidates(_ blocks: UnsafeRawBufferPointer, count: Int, _ mayContain: (UInt64) -> Bool) {
        precondition(count >= 0 && count * 16 <= blocks.count, "fewer RPIs derived than matched")
        let rpis = blocks.baseAddress!
        var interval = 0, word = 0
        while interval < count {
            let end = min(count, interval &+ 64)
            var bits: UInt64 = 0
            while interval < end {
                let low = UInt64(bigEndian: rpis.loadUnaligned(fromByteOffset: interval &* 16 &+ 8, as: UInt64.self))
                bits |= (mayContain(low) ? 1 : 0) &<< UInt64(interval & 63)
                interval &+= 1
            }
            candidates[word] = bits
            word &+= 1
        }
    }
}
