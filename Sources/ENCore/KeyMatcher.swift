/// A sighting attributed to a diagnosis key, with what its AEM revealed.
public struct MatchedSighting: Hashable, Sendable {
    public var time: Int64
    public var rssi: Int8?
    public var metadata: Metadata
    /// TX power − (RSSI + the receiving adapter's correction), floored at 0; nil when the RSSI is unknown.
    public var attenuation: Int?

    public init(time: Int64, rssi: Int8?, metadata: Metadata, attenuation: Int?) {
        self.time = time
        self.rssi = rssi
        self.metadata = metadata
        self.attenuation = attenuation
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

/// Finds the sightings of diagnosis keys (protocol.md §3). One per thread: it owns crypto contexts.
public final class KeyMatcher {
    /// Sightings up to this far outside a key's validity still count (clock drift).
    public static let validityTolerance: Int64 = 2 * 3_600
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

    /// The sightings of `key`'s RPIs within its validity ±2 h, or nil when there are none.
    public func match(_ key: DiagnosisKey) throws -> KeyMatch? {
        let tek = key.key
        let validity = tek.rollingStartIntervalNumber.unixSeconds..<Int64(tek.rollingEndIntervalNumber) * ENIntervalNumber.secondsPerInterval
        let earliest = validity.lowerBound - Self.validityTolerance, latest = validity.upperBound + Self.validityTolerance
        // A rolling period is at most 144 (key files are checked so); no key is derived further.
        let count = min(Int(tek.rollingPeriod), Int(ENIntervalNumber.tekRollingPeriod))
        let rpik = crypto.rollingProximityIdentifierKey(for: tek.keyData)
        let found: [(RollingProximityIdentifier, IndexedSighting)] = try index.withLookup(validity: validity) { lookup, filter, nextDay in
            try crypto.withRollingProximityIdentifiers(key: rpik, from: tek.rollingStartIntervalNumber, count: count) { blocks in
                // Two passes: every RPI's filter word is loaded before any is looked up further,
                // and the second visits only the few RPIs the filter let through.
                if let nextDay {
                    markCandidates(blocks, count: count) { filter.mayContain($0) || nextDay.mayContain($0) }
                } else {
                    markCandidates(blocks, count: count) { filter.mayContain($0) }
                }
                let words = (count + 63) / 64
                var found = [(RollingProximityIdentifier, IndexedSighting)]()
                for word in 0..<words {
                    var bits = candidates[word]
                    while bits != 0 {
                        let rpi = Bytes16(blocks, offset: (word * 64 + bits.trailingZeroBitCount) * 16)
                        bits &= bits - 1
                        lookup.forEachSighting(of: rpi) { sighting in
                            if sighting.time >= earliest && sighting.time < latest { found.append((rpi, sighting)) }
                        }
                    }
                }
                return found
            }
        }
        guard !found.isEmpty else { return nil }
        let aemk = crypto.associatedEncryptedMetadataKey(for: tek.keyData)
        var matched = [MatchedSighting]()
        for (rpi, sighting) in found {
            let metadata = try crypto.decryptMetadata(sighting.aem, key: aemk, rpi: rpi)
            guard Self.plausibleTransmitPower.contains(metadata.transmitPower) else {
                implausibleSightings += 1
                continue
            }
            let correction = correctionByAdapterNumber[Int(sighting.adapterNumber)]
            let attenuation = sighting.rssi.map { max(0, Int(metadata.transmitPower) - (Int($0) + correction)) }
            matched.append(MatchedSighting(time: sighting.time, rssi: sighting.rssi, metadata: metadata, attenuation: attenuation))
        }
        guard !matched.isEmpty else { return nil }
        matched.sort { ($0.time, $0.attenuation ?? -1, $0.metadata.transmitPower) < ($1.time, $1.attenuation ?? -1, $1.metadata.transmitPower) }
        return KeyMatch(key: key, sightings: matched)
    }

    /// Sets a bit in `candidates` for each of the `count` RPIs in `blocks` that `mayContain`.
    @inline(__always)
    private func markCandidates(_ blocks: UnsafeRawBufferPointer, count: Int, _ mayContain: (RollingProximityIdentifier) -> Bool) {
        for word in 0..<(count + 63) / 64 {
            var bits: UInt64 = 0
            for interval in word * 64..<min(count, word * 64 + 64) {
                bits |= (mayContain(Bytes16(blocks, offset: interval * 16)) ? 1 : 0) << (interval & 63)
            }
            candidates[word] = bits
        }
    }
}
