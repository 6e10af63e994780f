import FoundationEssentials
import Glibc

/// What matching weighs a sighting by beyond its RPI and time, read once the sighting is a
/// candidate of a key (`SightingIndex.details(of:)`): its AEM and adapter, and each of its
/// receptions (a sighting of the agent's database holds every reception of its identifier in
/// one scan, `SightingRecord`; one of JSON Lines, one).
public struct SightingDetails: Hashable, Sendable {
    /// A reception, with the time since the receiving device's scan before the one it was heard
    /// in, as of its own time.
    public struct Reception: Hashable, Sendable {
        public var heard: SightingRecord.Reception
        public var scanGap: ScanGap

        public init(_ heard: SightingRecord.Reception, scanGap: ScanGap) {
            self.heard = heard
            self.scanGap = scanGap
        }
    }

    public var aem: AssociatedEncryptedMetadata
    /// The adapter that received it, which picks its RSSI correction; nil when unknown.
    public var adapterAddress: BluetoothAddress?
    /// In the order heard, the first at the sighting's own time.
    public var receptions: [Reception]

    public init(aem: AssociatedEncryptedMetadata, adapterAddress: BluetoothAddress?, receptions: [Reception]) {
        self.aem = aem
        self.adapterAddress = adapterAddress
        self.receptions = receptions
    }
}

/// A reception as the index finds it: its time and details, without the RPI it was found by.
public struct IndexedSighting: Hashable, Sendable {
    /// Unix seconds (times after 2106 are kept as 2106: the index stores 32 bits).
    public var time: Int64
    public var aem: AssociatedEncryptedMetadata
    public var rssi: Int8?
    /// The adapter that received it; nil when unknown.
    public var adapterAddress: BluetoothAddress?
    /// Since the receiving device's previous scan.
    public var scanGap: ScanGap

    public init(time: Int64, aem: AssociatedEncryptedMetadata, rssi: Int8?, adapterAddress: BluetoothAddress? = nil,
                scanGap: ScanGap = .unknown) {
        self.time = time
        self.aem = aem
        self.rssi = rssi
        self.adapterAddress = adapterAddress
        self.scanGap = scanGap
    }
}

/// A sighting an index holds by reference: its number where its details are kept (the agent
/// database's row id) and its RPI, which the details must still be of.
public struct SightingReference: Hashable, Sendable, Comparable {
    public var reference: Int64
    public var rpi: RollingProximityIdentifier

    public init(reference: Int64, rpi: RollingProximityIdentifier) {
        self.reference = reference
        self.rpi = rpi
    }

    public static func < (left: Self, right: Self) -> Bool {
        (left.reference, left.rpi.high, left.rpi.low) < (right.reference, right.rpi.high, right.rpi.low)
    }
}

/// Where an index's sightings' details are when the index does not hold them: the agent's
/// database, read only for the few sightings a detection's keys found.
public protocol SightingResolver: Sendable {
    /// The details of each sighting of `sightings` (in ascending order, each once), in that
    /// order; nil for one no longer there (deleted since the index was read, or its number now
    /// another RPI's).
    func details(of sightings: [SightingReference]) throws -> [SightingDetails?]
}

/// Sightings by RPI: an open-addressed table of each sighting's RPI, time and a 64-bit
/// reference and a byte of the RPI to step over slots by, its columns in separate arrays, in
/// about 34 bytes an entry (4 million, 14 days of a busy place, in about 136 MB). Matching looks RPIs up through
/// `MatchingIndex`, which puts a filter for each day before the table; everything else it weighs
/// a sighting by (AEM, RSSI, adapter, previous scan) is read only for the few sightings a key
/// finds (`details(of:)`).
///
/// Two kinds of index, one table: one that holds its sightings (made from `Sighting`s: JSON
/// Lines, or an agent database read row by row) keeps each reception's details packed into the
/// reference of an entry of its own; one read from the agent database's index of sightings
/// (`AgentStore`) keeps an entry for each sighting, at its first reception's time, with its row
/// id, and its `resolver` reads the row with every reception (`SightingRecord`).
///
/// RPIs are AES output, so their bits are already uniformly random and serve as their own hash.
/// The columns sit on huge pages where the kernel allows: a million keys make 144 million
/// lookups.
public struct SightingIndex: Sendable {
    private var storage: Storage
    /// The sightings in the index: the lines of JSON Lines, the rows of a database.
    public private(set) var count = 0
    /// The entries of the table: a sighting's each, or each of its receptions in an index that
    /// holds its sightings.
    private var entries = 0
    /// Where the sightings' details are; nil when the index holds them.
    public let resolver: (any SightingResolver)?
    /// Whether `resolver` is nil: what each add checks, where a look at the existential would
    /// copy it, a retain and a release per sighting.
    private let holdsDetails: Bool
    /// The entries by the hour of their (stored) time, so that `MatchingIndex` sizes its day
    /// filters without a pass over the table.
    public private(set) var hours = HourCounts()
    /// The receiving adapters' addresses, in the order first seen, of an index that holds its
    /// sightings: a sighting keeps only a small number for its adapter (0: unknown, n: the nth
    /// of these).
    public private(set) var adapterAddresses = [BluetoothAddress]()

    /// Adapters a sighting's number can tell apart: beyond them (never seen on one machine), a
    /// sighting counts as of an unknown adapter.
    public static let maximumAdapterCount = Int(UInt8.max)

    /// At most this many percent of the table's slots hold a sighting: only lookups that pass
    /// a filter probe the table, so its probes may be a little longer (85 % instead of 80 %
    /// cost no measurable time at 4 million sightings and saved 10 MB).
    static let maximumLoadPercent = 85

    /// An index that holds its sightings, sized for about `expectedCount` of them (it grows
    /// beyond that when needed).
    public init(expectedCount: Int = 0) {
        storage = Storage(capacity: Self.capacity(for: expectedCount))
        resolver = nil
        holdsDetails = true
    }

    /// An index of sightings whose details `resolver` reads by reference (`add(rpi:time:reference:)`).
    public init(expectedCount: Int = 0, resolver: any SightingResolver) {
        storage = Storage(capacity: Self.capacity(for: expectedCount))
        self.resolver = resolver
        holdsDetails = false
    }

    public init(_ sightings: [Sighting]) {
        self.init(expectedCount: sightings.count)
        for sighting in sightings { add(sighting) }
    }

    private static func capacity(for expectedCount: Int) -> Int {
        max(16, expectedCount * 100 / maximumLoadPercent + 1)
    }

    public mutating func add(_ sighting: Sighting) {
        add(rpi: sighting.rpi, aem: sighting.aem, rssi: sighting.rssi, time: sighting.time, adapterAddress: sighting.adapterAddress,
            previousScanTime: sighting.previousScanTime)
    }

    /// Adds a reception to an index that holds its sightings: a sighting of its own, or with
    /// `ofTheLastSighting`, a later reception of the sighting added last (an entry of its own,
    /// counted with that sighting). `previousScanTime`: the receiving device's previous scan
    /// (`Sighting.previousScanTime`); nil when unknown.
    public mutating func add(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64,
                             adapterAddress: BluetoothAddress?, previousScanTime: Int64? = nil, ofTheLastSighting: Bool = false) {
        precondition(holdsDetails, "an index whose sightings are read by reference takes references")
        let packed = PackedDetails(aem: aem, rssi: rssi, adapterNumber: adapterNumber(for: adapterAddress),
                                   scanGap: ScanGap(time: time, previousScanTime: previousScanTime))
        insert(rpi: rpi, time: time, reference: packed.rawValue)
        if !ofTheLastSighting { count += 1 }
    }

    /// Adds a sighting whose details the index's resolver reads by `reference`, at the time of its
    /// first reception.
    public mutating func add(rpi: RollingProximityIdentifier, time: Int64, reference: Int64) {
        precondition(!holdsDetails, "an index that holds its sightings takes their details")
        insert(rpi: rpi, time: time, reference: reference)
        count += 1
    }

    private mutating func insert(rpi: RollingProximityIdentifier, time: Int64, reference: Int64) {
        if (entries + 1) * 100 > storage.capacity * Self.maximumLoadPercent {
            storage = storage.resized(to: max(16, entries * 2 + entries / 2))
        } else if !isKnownUniquelyReferenced(&storage) {
            storage = storage.resized(to: storage.capacity)
        }
        let stored = Self.storedTime(time)
        storage.insert(rpi: rpi, time: stored, reference: reference)
        hours.count(Int64(stored))
        entries += 1
    }

    /// `time` as the table keeps it: 32 bits, the last value marking an empty slot.
    public static func storedTime(_ time: Int64) -> UInt32 {
        UInt32(clamping: min(max(time, 0), Int64(Storage.emptySlot) - 1))
    }

    /// The number of the adapter at `address`, numbering it when new. A machine has a few
    /// adapters, so a search of the list costs less than hashing.
    private mutating func adapterNumber(for address: BluetoothAddress?) -> UInt8 {
        guard let address else { return 0 }
        if let known = adapterAddresses.firstIndex(of: address) { return UInt8(known + 1) }
        guard adapterAddresses.count < Self.maximumAdapterCount else { return 0 }
        adapterAddresses.append(address)
        return UInt8(adapterAddresses.count)
    }

    /// The details of `sightings`, by reference: unpacked from the references of an index that
    /// holds its sightings, read by the resolver (once, in ascending order) for one that does
    /// not. A sighting whose details are gone has none.
    public func details(of sightings: some Collection<SightingReference>) throws -> [SightingReference: SightingDetails] {
        var found = [SightingReference: SightingDetails](minimumCapacity: sightings.count)
        guard let resolver else {
            for sighting in sightings { found[sighting] = details(packed: sighting.reference) }
            return found
        }
        let wanted = Array(Set(sightings)).sorted()
        guard !wanted.isEmpty else { return found }
        let details = try resolver.details(of: wanted)
        precondition(details.count == wanted.count, "a resolver answers each sighting asked for")
        for (sighting, details) in zip(wanted, details) { found[sighting] = details }
        return found
    }

    /// The details of an entry of an index that holds its sightings: one reception.
    private func details(packed reference: Int64) -> SightingDetails {
        let packed = PackedDetails(rawValue: reference)
        return SightingDetails(aem: packed.aem, adapterAddress: packed.adapterNumber == 0 ? nil : adapterAddresses[Int(packed.adapterNumber) - 1],
                               receptions: [SightingDetails.Reception(SightingRecord.Reception(secondsAfterFirst: 0, rssi: packed.rssi), scanGap: packed.scanGap)])
    }

    /// Calls `body` with each sighting of `rpi` (none when it was never seen), its time and
    /// reference, in no particular order.
    public func forEachSighting(of rpi: RollingProximityIdentifier, _ body: (_ time: Int64, _ reference: Int64) throws -> Void) rethrows {
        try withLookup { try $0.forEachSighting(of: rpi, body) }
    }

    /// Calls `body` with a view for lookups in a hot loop: plain pointers into the index, valid
    /// during the call, so that no lookup touches a reference count.
    public func withLookup<Result>(_ body: (Lookup) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(storage) { try body(storage.lookup) }
    }

    /// The index's columns as `withLookup` lends them.
    public struct Lookup {
        let capacity: Int
        let tags: UnsafePointer<UInt8>
        let rpis: UnsafePointer<RollingProximityIdentifier>
        let times: UnsafePointer<UInt32>
        let references: UnsafePointer<Int64>

        /// Calls `body` with each sighting of `rpi`, its time and reference, in no particular order.
        @inline(__always)
        public func forEachSighting(of rpi: RollingProximityIdentifier, _ body: (_ time: Int64, _ reference: Int64) throws -> Void) rethrows {
            var slot = Storage.reduce(rpi.high, capacity)
            let tag = Storage.tag(rpi)
            while tags[slot] != Storage.emptyTag {
                if tags[slot] == tag, rpis[slot] == rpi { try body(Int64(times[slot]), references[slot]) }
                slot = slot + 1 == capacity ? 0 : slot + 1
            }
        }
    }

    /// The receptions of `rpi`, in time order, of an index that holds its sightings (one that
    /// reads them by reference: `resolvedSightings(of:)`).
    public func sightings(of rpi: RollingProximityIdentifier) -> [IndexedSighting] {
        precondition(resolver == nil, "an index whose sightings are read by reference resolves them: resolvedSightings(of:)")
        // An index that holds its sightings reads none: it cannot fail.
        return try! resolvedSightings(of: rpi)
    }

    /// The receptions of `rpi`, in time order (those of one second by AEM, RSSI and adapter),
    /// their details unpacked or read by the resolver.
    public func resolvedSightings(of rpi: RollingProximityIdentifier) throws -> [IndexedSighting] {
        var found = [(time: Int64, reference: SightingReference)]()
        forEachSighting(of: rpi) { found.append(($0, SightingReference(reference: $1, rpi: rpi))) }
        let details = try details(of: found.map(\.reference))
        return found.flatMap { sighting in
            guard let details = details[sighting.reference] else { return [IndexedSighting]() }
            return details.receptions.map { reception in
                IndexedSighting(time: sighting.time + Int64(reception.heard.secondsAfterFirst), aem: details.aem, rssi: reception.heard.rssi,
                                adapterAddress: details.adapterAddress, scanGap: reception.scanGap)
            }
        }.sorted { Self.order(of: $0) < Self.order(of: $1) }
    }

    private static func order(of sighting: IndexedSighting) -> (Int64, UInt32, Int8, UInt64) {
        (sighting.time, sighting.aem.rawValue, sighting.rssi ?? .max, sighting.adapterAddress?.rawValue ?? 0)
    }

    /// A sighting's details in the 64 bits of its reference, for an index that holds its
    /// sightings: the AEM (bits 0–31), the RSSI (32–39, `Sighting.rssiNotAvailable` for none),
    /// the adapter's number (40–47), the scan gap's minutes (48–55, `Int8.min` for unknown).
    struct PackedDetails {
        static let unknownScanGap = Int8.min
        let rawValue: Int64

        init(rawValue: Int64) { self.rawValue = rawValue }

        init(aem: AssociatedEncryptedMetadata, rssi: Int8?, adapterNumber: UInt8, scanGap: ScanGap) {
            let rssiByte = UInt8(bitPattern: rssi ?? Int8(Sighting.rssiNotAvailable))
            let gapByte = UInt8(bitPattern: scanGap.minutes ?? Self.unknownScanGap)
            rawValue = Int64(bitPattern: UInt64(aem.rawValue) | UInt64(rssiByte) << 32 | UInt64(adapterNumber) << 40 | UInt64(gapByte) << 48)
        }

        private func byte(_ shift: Int) -> UInt8 { UInt8(truncatingIfNeeded: UInt64(bitPattern: rawValue) >> shift) }

        var aem: AssociatedEncryptedMetadata { AssociatedEncryptedMetadata(rawValue: UInt32(truncatingIfNeeded: rawValue)) }
        var rssi: Int8? {
            let rssi = Int8(bitPattern: byte(32))
            return rssi == Int8(Sighting.rssiNotAvailable) ? nil : rssi
        }
        var adapterNumber: UInt8 { byte(40) }
        var scanGap: ScanGap {
            let minutes = Int8(bitPattern: byte(48))
            return ScanGap(minutes: minutes == Self.unknownScanGap ? nil : minutes)
        }
    }

    /// The table, in memory the index owns. Sendable by hand: `SightingIndex` writes to it only
    /// while it holds the one reference (`add` copies it first otherwise), so a table that another
    /// copy of the index, on another thread, can see is never written.
    final class Storage: @unchecked Sendable {
        static let emptySlot = UInt32.max

        let capacity: Int
        /// A byte of each slot's RPI (`tag(_:)`), `emptyTag` where no sighting is: a lookup
        /// steps through a run of occupied slots on these bytes, a cache line for 64 slots, and
        /// reads an RPI only where its byte matches. Most lookups are of RPIs the index does
        /// not hold, whose run at 85 % load is some 20 slots long: 5 cache lines of RPIs and
        /// times each without the tags.
        private let tags: UnsafeMutablePointer<UInt8>
        private let rpis: UnsafeMutablePointer<RollingProximityIdentifier>
        /// `emptySlot` where no sighting is.
        private let times: UnsafeMutablePointer<UInt32>
        /// A row id, or packed details (`PackedDetails`).
        private let references: UnsafeMutablePointer<Int64>

        init(capacity: Int) {
            self.capacity = capacity
            tags = Self.allocate(capacity, repeating: Self.emptyTag)
            rpis = Self.allocate(capacity, repeating: .zero)
            times = Self.allocate(capacity, repeating: Self.emptySlot)
            references = Self.allocate(capacity, repeating: 0)
        }

        deinit {
            free(tags)
            free(rpis)
            free(times)
            free(references)
        }

        /// A copy of every sighting in a new table of `capacity` slots.
        func resized(to capacity: Int) -> Storage {
            let copy = Storage(capacity: capacity)
            for slot in 0..<self.capacity where times[slot] != Self.emptySlot {
                copy.insert(rpi: rpis[slot], time: times[slot], reference: references[slot])
            }
            return copy
        }

        func insert(rpi: RollingProximityIdentifier, time: UInt32, reference: Int64) {
            var slot = Self.reduce(rpi.high, capacity)
            while tags[slot] != Self.emptyTag { slot = slot + 1 == capacity ? 0 : slot + 1 }
            tags[slot] = Self.tag(rpi)
            rpis[slot] = rpi
            times[slot] = time
            references[slot] = reference
        }

        var lookup: Lookup {
            Lookup(capacity: capacity, tags: tags, rpis: rpis, times: times, references: references)
        }

        static let emptyTag: UInt8 = 0

        /// The byte a slot keeps of `rpi`: never `emptyTag`. The high half's lowest byte, as
        /// its top bits choose the slot.
        @inline(__always)
        static func tag(_ rpi: RollingProximityIdentifier) -> UInt8 {
            max(1, UInt8(truncatingIfNeeded: rpi.high))
        }

        /// `value` scaled into 0..<`range` (Lemire's multiply-shift). The table uses an RPI's
        /// high half, the filters its low one.
        @inline(__always)
        static func reduce(_ value: UInt64, _ range: Int) -> Int {
            Int(truncatingIfNeeded: value.multipliedFullWidth(by: UInt64(range)).high)
        }

        private static let hugePage = 2 << 20

        /// `count` elements; a column of 2 MiB or more is aligned to and advised for huge pages.
        static func allocate<Element>(_ count: Int, repeating value: Element) -> UnsafeMutablePointer<Element> {
            let bytes = max(1, count * MemoryLayout<Element>.stride)
            let huge = bytes >= hugePage
            var memory: UnsafeMutableRawPointer?
            let length = huge ? (bytes + hugePage - 1) / hugePage * hugePage : bytes
            guard posix_memalign(&memory, huge ? hugePage : 64, length) == 0, let memory else {
                fatalError("out of memory for a sighting index of \(count) slots")
            }
            if huge { _ = madvise(memory, length, MADV_HUGEPAGE) }
            let column = memory.bindMemory(to: Element.self, capacity: count)
            column.initialize(repeating: value, count: count)
            return column
        }
    }
}

/// How many times fell in each hour (UTC, whole hours since the epoch), from the first hour to
/// the last one counted: counting one costs an index into an array, grown when a time falls
/// outside it.
public struct HourCounts: Sendable, Equatable {
    /// The first hour counted; `counts[i]` is hour `firstHour + i`'s.
    public private(set) var firstHour: Int64 = 0
    public private(set) var counts = [Int]()

    public init() {}

    @inline(__always)
    mutating func count(_ time: Int64) {
        let hour = time / 3_600
        if counts.isEmpty {
            firstHour = hour
            counts = [0]
        } else if hour < firstHour {
            counts.insert(contentsOf: repeatElement(0, count: Int(firstHour - hour)), at: 0)
            firstHour = hour
        } else if hour - firstHour >= counts.count {
            counts.append(contentsOf: repeatElement(0, count: Int(hour - firstHour) - counts.count + 1))
        }
        counts[Int(hour - firstHour)] += 1
    }
}
