import FoundationEssentials
import Glibc

/// A sighting index ready for matching: before its table, a blocked filter for each UTC day
/// (16 bits a sighting, two bits in one word, as bench/derivation-ceiling.c's: about 1.7 % of
/// the RPIs never seen pass to the table. Four bits let 0.5 % through, but their two more shifts
/// for each of a key's 144 RPIs cost more than the table's probes they save: 9 % more CPU time
/// for 500k keys × 100k sightings, and no less for 1M × 4M) of the sightings a key
/// valid on that day can match, those with a reception from 2 h before the day to 2 h after it
/// (`KeyMatcher.validityTolerance`; a sighting's receptions lie up to
/// `SightingRecord.longestSpanSeconds` after its time). A key's 144 lookups go to its day's filter alone: a
/// fourteenth of one filter for all the sightings, so that it stays in a core's cache while the
/// keys of that day are matched (4 million sightings: 680 kB instead of 8 MB).
///
/// Built once from a finished index, in one pass over its table (sized by the index's sightings
/// per hour); the index is kept, so sightings added to it later are not seen here.
public struct MatchingIndex: Sendable {
    public let sightings: SightingIndex
    private let filters: DayFilters

    public init(_ sightings: SightingIndex) {
        self.sightings = sightings
        filters = sightings.withLookup { DayFilters($0, hours: sightings.hours) }
    }

    /// Calls `body` with the table's lookup and the filter (or the two, when the key's validity
    /// spans two UTC days) that hold every RPI seen within `validity` ±2 h.
    public func withLookup<Result>(validity: Range<Int64>,
                                   _ body: (SightingIndex.Lookup, DayFilter, DayFilter?) throws -> Result) rethrows -> Result {
        let first = UTCDay(containing: validity.lowerBound).number
        let last = UTCDay(containing: max(validity.lowerBound, validity.upperBound - 1)).number
        return try withExtendedLifetime(filters) {
            try sightings.withLookup { lookup in
                try body(lookup, filters.filter(day: first), last == first ? nil : filters.filter(day: last))
            }
        }
    }

    /// The numbers of the days whose filter holds the sightings at `times`: those within 2 h of
    /// one of their receptions, which lie up to `SightingRecord.longestSpanSeconds` after them.
    static func days(holding times: ClosedRange<Int64>) -> ClosedRange<Int64> {
        let first = UTCDay(containing: times.lowerBound - KeyMatcher.validityTolerance)
        let last = UTCDay(containing: times.upperBound + SightingRecord.longestSpanSeconds + KeyMatcher.validityTolerance)
        return first.number...last.number
    }
}

/// One day's filter, as `MatchingIndex.withLookup` lends it.
public struct DayFilter {
    let words: UnsafePointer<UInt64>
    let count: Int

    /// Whether `rpi` may have been seen on the day: false for all but about 1.7 % of the RPIs
    /// never seen. Without a branch, so that a loop over many RPIs has all their filter words in
    /// flight at once instead of waiting for each cache miss in turn.
    @inline(__always)
    public func mayContain(_ rpi: RollingProximityIdentifier) -> Bool {
        mayContain(low: rpi.low)
    }

    /// `mayContain` of the RPI whose low half is `low` (all the filter reads of an RPI).
    @inline(__always)
    func mayContain(low: UInt64) -> Bool {
        let bits = Self.bits(low)
        return words[Self.word(low, words: count)] & bits == bits
    }

    /// The word of a filter of `words` words for the RPI whose low half is `low`: chosen by its
    /// top bits.
    @inline(__always)
    static func word(_ low: UInt64, words: Int) -> Int {
        SightingIndex.Storage.reduce(low, words)
    }

    /// The RPI's two bits in its word, chosen by the low half's bottom 12 bits. Masking shifts:
    /// each amount is below 64 already, and the hot loop needs no check of it.
    @inline(__always)
    static func bits(_ low: UInt64) -> UInt64 {
        1 &<< (low & 63) | 1 &<< ((low &>> 6) & 63)
    }
}

/// The filters of every day from the first to the last sighting's, in one allocation.
/// Sendable by hand: the words are written in `init` only and read by every matching thread after.
private final class DayFilters: @unchecked Sendable {
    private let firstDay: Int64
    /// Day `firstDay + i` has the words `offsets[i]..<offsets[i + 1]`: at least one, a zero
    /// word for a day without sightings. The last word, after every day's, is the zero filter
    /// of the days outside.
    private let offsets: [Int]
    private let words: UnsafeMutablePointer<UInt64>

    /// The filters of `table`'s sightings, sized from `hours` (its entries by hour): one pass
    /// over the table, to fill them. Each hour's entries count towards every day any of them
    /// goes to.
    init(_ table: SightingIndex.Lookup, hours: HourCounts) {
        let empty = SightingIndex.Storage.emptySlot
        guard let first = hours.counts.firstIndex(where: { $0 > 0 }), let last = hours.counts.lastIndex(where: { $0 > 0 }) else {
            (firstDay, offsets) = (0, [0])
            words = SightingIndex.Storage.allocate(1, repeating: 0)
            return
        }
        func hourTimes(_ index: Int) -> ClosedRange<Int64> {
            let start = (hours.firstHour + Int64(index)) * 3_600
            return start...(start + 3_599)
        }
        firstDay = MatchingIndex.days(holding: hourTimes(first)).lowerBound
        let dayCount = Int(MatchingIndex.days(holding: hourTimes(last)).upperBound - firstDay) + 1
        var sightings = [Int](repeating: 0, count: dayCount)
        for hour in first...last where hours.counts[hour] > 0 {
            for day in MatchingIndex.days(holding: hourTimes(hour)) { sightings[Int(day - firstDay)] += hours.counts[hour] }
        }
        var offsets = [0]
        offsets.reserveCapacity(dayCount + 1)
        // 16 bits a sighting.
        for count in sightings { offsets.append(offsets.last! + max(1, (count + 3) / 4)) }
        self.offsets = offsets
        words = SightingIndex.Storage.allocate(offsets.last! + 1, repeating: 0)
        for slot in 0..<table.capacity where table.times[slot] != empty {
            let time = Int64(table.times[slot])
            for day in MatchingIndex.days(holding: time...time) {
                let start = offsets[Int(day - firstDay)]
                let low = table.rpis[slot].low
                words[start + DayFilter.word(low, words: offsets[Int(day - firstDay) + 1] - start)] |= DayFilter.bits(low)
            }
        }
    }

    deinit { free(words) }

    func filter(day: Int64) -> DayFilter {
        guard day >= firstDay, day - firstDay < offsets.count - 1 else { return DayFilter(words: words + offsets.last!, count: 1) }
        let start = offsets[Int(day - firstDay)]
        return DayFilter(words: words + start, count: offsets[Int(day - firstDay) + 1] - start)
    }
}
