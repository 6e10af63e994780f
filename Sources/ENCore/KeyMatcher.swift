/// A sighting attributed to a diagnosis key, with what its AEM revealed.
public struct MatchedSighting: Hashable, Sendable {
    public var time: Int64
    public var rssi: Int8?
    public var metadata: Metadata
    /// TX power − (RSSI + the receiving adapter's correction), floored at 0; nil when the RSSI is unknown.
    public var attenuation: Int?
    /// Since the receiving device's previous scan.
    public var scanGap: ScanGap
    /// Whether it is the strongest sighting of its RPI in its scan, the one v1 counts.
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

/// A diagnosis key and the sightings of its RPIs.
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
    /// The RSSI correction of each adapter of the index, by the number the index gave it.
    private let correctionByAdapterNumber: [Int]
    /// Per interval of the key being matched, a bit: whether the index may hold its RPI.
    private let candidates = UnsafeMutablePointer<UInt64>.allocate(capacity: KeyMatcher.candidateWords)
    private static let candidateWords = (Int(ENIntervalNumber.tekRollingPeriod) + 63) / 64
    /// Sightings dropped for an implausible TX power since this matcher was made.
    public private(set) var implausibleSightings = 0

    /// - Parameter rssiCorrections: the receive calibration of each adapter, added to the RSSIs it recorded.
    public init(index: MatchingIndex, rssiCorrections: RssiCorrections = RssiCorrections()) throws {
        self.index = index
        correctionByAdapterNumber = [rssiCorrections.defaultCorrection] + index.sightings.adapterAddresses.map(rssiCorrections.correction(for:))
        crypto = try ExposureCrypto()
    }

    public convenience init(index: SightingIndex, rssiCorrections: RssiCorrections = RssiCorrections()) throws {
        try self.init(index: MatchingIndex(index), rssiCorrections: rssiCorrections)
    }

    deinit { candidates.deallocate() }

    /// The sightings of `key`'s RPIs that count, or nil when there are none: each RPI's within 12
    /// intervals of its own and 20 minutes of its first counted one.
    public func match(_ key: DiagnosisKey) throws -> KeyMatch? {
        // Google's ExposureMatchingTracer.traceWithJava skips RECURSIVE keys
        // (ContactTracingFeature.enableRecursiveTekReportType is false).
        guard key.reportType != .recursive else { return nil }
        let tek = key.key
        let validity = tek.rollingStartIntervalNumber.unixSeconds..<Int64(tek.rollingEndIntervalNumber) * ENIntervalNumber.secondsPerInterval
        let firstInterval = Int64(tek.rollingStartIntervalNumber.rawValue)
        // A rolling period is at most 144 (key files are checked so); no key is derived further.
        let count = min(Int(tek.rollingPeriod), Int(ENIntervalNumber.tekRollingPeriod))
        let rpik = crypto.rollingProximityIdentifierKey(for: tek.keyData)
        let found: [Counted] = try index.withLookup(validity: validity) { lookup, filter, nextDay in
            try crypto.withRollingProximityIdentifiers(key: rpik, from: tek.rollingStartIntervalNumber, count: count) { blocks in
                // Two passes: every RPI's filter word is loaded before any is looked up further,
                // and the second visits only the few RPIs the filter let through.
                if let nextDay {
                    markCandidates(blocks, count: count) { filter.mayContain(low: $0) || nextDay.mayContain(low: $0) }
                } else {
                    markCandidates(blocks, count: count) { filter.mayContain(low: $0) }
                }
                let words = (count + 63) / 64
                var found = [Counted]()
                for word in 0..<words {
                    var bits = candidates[word]
                    while bits != 0 {
                        let offset = word * 64 + bits.trailingZeroBitCount
                        let rpi = Bytes16(blocks, offset: offset * 16)
                        bits &= bits - 1
                        let counted = Self.countedTimes(ofRPIOf: firstInterval + Int64(offset))
                        let rpiStart = found.count
                        lookup.forEachSighting(of: rpi) { sighting in
                            if counted.contains(sighting.time) { found.append(Counted(rpi: rpi, sighting: sighting)) }
                        }
                        Self.settle(&found, from: rpiStart)
                    }
                }
                return found
            }
        }
        guard !found.isEmpty else { return nil }
        let aemk = crypto.associatedEncryptedMetadataKey(for: tek.keyData)
        var matched = [MatchedSighting]()
        for counted in found {
            let sighting = counted.sighting
            let metadata = try crypto.decryptMetadata(sighting.aem, key: aemk, rpi: counted.rpi)
            guard Self.plausibleTransmitPower.contains(metadata.transmitPower) else {
                implausibleSightings += 1
                continue
            }
            let correction = correctionByAdapterNumber[Int(sighting.adapterNumber)]
            let attenuation = sighting.rssi.map { max(0, Int(metadata.transmitPower) - (Int($0) + correction)) }
            matched.append(MatchedSighting(time: sighting.time, rssi: sighting.rssi, metadata: metadata, attenuation: attenuation,
                                           scanGap: sighting.scanGap, strongestOfItsScan: counted.strongestOfScan))
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

    /// A sighting of one of the key's RPIs that counts.
    struct Counted {
        var rpi: RollingProximityIdentifier
        var sighting: IndexedSighting
        var strongestOfScan = false
    }

    /// Settles `found[start...]`, one RPI's counted sightings, as Google's
    /// ExposureMatchingTracer.getValidSightingsForRpi does: in time order, without those more than
    /// `maximumRpiSightingSpan` after the first, and with the strongest of each scan marked
    /// (the first of equals; the aggregation v1 counts, ContactTracingFeature.aggregateSightingsFromSingleScan).
    static func settle(_ found: inout [Counted], from start: Int) {
        guard found.count > start else { return }
        found[start...].sort { $0.sighting.time < $1.sighting.time }
        let first = found[start].sighting.time
        var end = found.count
        while found[end - 1].sighting.time - first > maximumRpiSightingSpan { end -= 1 }
        found.removeLast(found.count - end)
        func strength(_ index: Int) -> Int { found[index].sighting.rssi.map(Int.init) ?? Int.min }
        var strongest = start
        for index in start + 1..<end {
            if !ExposureWindowing.sameScan(gap: found[index].sighting.time - found[index - 1].sighting.time) {
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
