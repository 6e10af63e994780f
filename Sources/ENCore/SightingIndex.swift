/// Sightings indexed by RPI for matching: each derived RPI is looked up in constant time,
/// never by scanning the sightings.
///
/// RPIs are AES output, so their bits are already uniformly random and serve as their own hash.
/// A bitset on one half of the RPI rejects almost every lookup in one cache-friendly probe;
/// an open-addressed table on the other half finds the rest.
public struct SightingIndex: Sendable {
    /// The sightings grouped by RPI, each group in time order.
    public let sightings: [Sighting]
    /// Group `u` is `sightings[groupStarts[u]..<groupStarts[u + 1]]`.
    private let groupStarts: [Int32]
    private let groupRPIs: [RollingProximityIdentifier]
    private let table: [Int32]
    private let tableMask: Int
    private let filter: [UInt64]
    private let filterMask: UInt64

    public init(_ sightings: [Sighting]) {
        precondition(sightings.count < Int32.max, "too many sightings for one index")
        self.sightings = sightings.sorted { ($0.rpi.high, $0.rpi.low, $0.time) < ($1.rpi.high, $1.rpi.low, $1.time) }
        var starts = [Int32](), rpis = [RollingProximityIdentifier]()
        for (offset, sighting) in self.sightings.enumerated() where rpis.last != sighting.rpi {
            starts.append(Int32(offset))
            rpis.append(sighting.rpi)
        }
        starts.append(Int32(self.sightings.count))
        groupStarts = starts
        groupRPIs = rpis

        let slots = max(16, Self.powerOfTwo(atLeast: rpis.count * 2))
        tableMask = slots - 1
        var table = [Int32](repeating: -1, count: slots)
        // About 32 filter bits per RPI: a false positive in about 3% of lookups.
        let filterBits = max(64, Self.powerOfTwo(atLeast: rpis.count * 32))
        filterMask = UInt64(filterBits - 1)
        var filter = [UInt64](repeating: 0, count: filterBits / 64)
        for (group, rpi) in rpis.enumerated() {
            var slot = Int(truncatingIfNeeded: rpi.high) & tableMask
            while table[slot] >= 0 { slot = (slot + 1) & tableMask }
            table[slot] = Int32(group)
            let bit = rpi.low & filterMask
            filter[Int(bit >> 6)] |= 1 << (bit & 63)
        }
        self.table = table
        self.filter = filter
    }

    /// The sightings of `rpi`, in time order (empty when it was never seen).
    @inline(__always)
    public func sightings(of rpi: RollingProximityIdentifier) -> ArraySlice<Sighting> {
        let bit = rpi.low & filterMask
        guard filter[Int(bit >> 6)] & (1 << (bit & 63)) != 0 else { return [] }
        var slot = Int(truncatingIfNeeded: rpi.high) & tableMask
        while true {
            let group = Int(table[slot])
            if group < 0 { return [] }
            if groupRPIs[group] == rpi { return sightings[Int(groupStarts[group])..<Int(groupStarts[group + 1])] }
            slot = (slot + 1) & tableMask
        }
    }

    public var distinctRPICount: Int { groupRPIs.count }

    private static func powerOfTwo(atLeast value: Int) -> Int {
        value <= 1 ? 1 : 1 << (Int.bitWidth - (value - 1).leadingZeroBitCount)
    }
}
