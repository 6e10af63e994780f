import FoundationEssentials
import Glibc

/// A sighting as the index keeps it: what matching needs, without the RPI it was found by.
public struct IndexedSighting: Hashable, Sendable {
    /// Unix seconds (times after 2106 are kept as 2106: the index stores 32 bits).
    public var time: Int64
    public var aem: AssociatedEncryptedMetadata
    public var rssi: Int8?
    /// The index's number for the adapter that received it (`SightingIndex.adapterAddress(numbered:)`).
    public var adapterNumber: UInt8
    /// Since the receiving device's previous scan.
    public var scanGap: ScanGap

    public init(time: Int64, aem: AssociatedEncryptedMetadata, rssi: Int8?, adapterNumber: UInt8 = 0,
                scanGap: ScanGap = .unknown) {
        self.time = time
        self.aem = aem
        self.rssi = rssi
        self.adapterNumber = adapterNumber
        self.scanGap = scanGap
    }
}

/// Sightings by RPI: an open-addressed table, its columns in separate arrays, in about 33 bytes a
/// sighting (4 million sightings, 14 days of a busy place, in about 127 MB). Sightings are added
/// as they are read, so no list of them is held beside the index. Matching looks RPIs up through
/// `MatchingIndex`, which puts a filter for each day before the table.
///
/// RPIs are AES output, so their bits are already uniformly random and serve as their own hash.
/// The columns sit on huge pages where the kernel allows: a million keys make 144 million
/// lookups.
public struct SightingIndex: Sendable {
    private var storage: Storage
    /// The sightings in the index.
    public private(set) var count = 0
    /// The receiving adapters' addresses, in the order first seen: a sighting keeps only a small
    /// number for its adapter (0: unknown, n: the nth of these), so that matching looks its RSSI
    /// correction up in a short array.
    public private(set) var adapterAddresses = [BluetoothAddress]()

    /// Adapters a sighting's number can tell apart: beyond them (never seen on one machine), a
    /// sighting counts as of an unknown adapter.
    public static let maximumAdapterCount = Int(UInt8.max)

    /// At most this many percent of the table's slots hold a sighting: only lookups that pass
    /// a filter probe the table, so its probes may be a little longer (85 % instead of 80 %
    /// cost no measurable time at 4 million sightings and saved 10 MB).
    static let maximumLoadPercent = 85

    /// An index sized for about `expectedCount` sightings (it grows beyond that when needed).
    public init(expectedCount: Int = 0) {
        storage = Storage(capacity: max(16, expectedCount * 100 / Self.maximumLoadPercent + 1))
    }

    public init(_ sightings: [Sighting]) {
        self.init(expectedCount: sightings.count)
        for sighting in sightings { add(sighting) }
    }

    public mutating func add(_ sighting: Sighting) {
        add(rpi: sighting.rpi, aem: sighting.aem, rssi: sighting.rssi, time: sighting.time, adapterAddress: sighting.adapterAddress,
            previousScanTime: sighting.previousScanTime)
    }

    /// `previousScanTime`: the receiving device's previous scan (`Sighting.previousScanTime`); nil when unknown.
    public mutating func add(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64,
                             adapterAddress: BluetoothAddress?, previousScanTime: Int64? = nil) {
        if (count + 1) * 100 > storage.capacity * Self.maximumLoadPercent {
            storage = storage.resized(to: max(16, count * 2 + count / 2))
        } else if !isKnownUniquelyReferenced(&storage) {
            storage = storage.resized(to: storage.capacity)
        }
        storage.insert(rpi: rpi, aem: aem.rawValue, rssi: rssi ?? Int8(Sighting.rssiNotAvailable),
                       time: UInt32(clamping: min(max(time, 0), Int64(Storage.emptySlot) - 1)), adapter: adapterNumber(for: adapterAddress),
                       scanGap: ScanGap(time: time, previousScanTime: previousScanTime).minutes ?? Storage.unknownScanGap)
        count += 1
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

    /// The address of the adapter the index numbered `number`; nil for an unknown one.
    public func adapterAddress(numbered number: UInt8) -> BluetoothAddress? {
        number == 0 ? nil : adapterAddresses[Int(number) - 1]
    }

    /// Calls `body` with each sighting of `rpi` (none when it was never seen), in no particular order.
    public func forEachSighting(of rpi: RollingProximityIdentifier, _ body: (IndexedSighting) throws -> Void) rethrows {
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
        let aems: UnsafePointer<UInt32>
        let rssis: UnsafePointer<Int8>
        let adapters: UnsafePointer<UInt8>
        let scanGaps: UnsafePointer<Int8>

        /// Calls `body` with each sighting of `rpi`, in no particular order.
        @inline(__always)
        public func forEachSighting(of rpi: RollingProximityIdentifier, _ body: (IndexedSighting) throws -> Void) rethrows {
            var slot = Storage.reduce(rpi.high, capacity)
            let tag = Storage.tag(rpi)
            while tags[slot] != Storage.emptyTag {
                if tags[slot] == tag, rpis[slot] == rpi {
                    try body(IndexedSighting(time: Int64(times[slot]), aem: AssociatedEncryptedMetadata(rawValue: aems[slot]),
                                             rssi: rssis[slot] == Int8(Sighting.rssiNotAvailable) ? nil : rssis[slot],
                                             adapterNumber: adapters[slot],
                                             scanGap: ScanGap(minutes: scanGaps[slot] == Storage.unknownScanGap ? nil : scanGaps[slot])))
                }
                slot = slot + 1 == capacity ? 0 : slot + 1
            }
        }
    }

    /// The sightings of `rpi`, in time order.
    public func sightings(of rpi: RollingProximityIdentifier) -> [IndexedSighting] {
        var found = [IndexedSighting]()
        forEachSighting(of: rpi) { found.append($0) }
        return found.sorted { ($0.time, $0.aem.rawValue) < ($1.time, $1.aem.rawValue) }
    }

    /// The table, in memory the index owns. Sendable by hand: `SightingIndex` writes to it only
    /// while it holds the one reference (`add` copies it first otherwise), so a table that another
    /// copy of the index, on another thread, can see is never written.
    final class Storage: @unchecked Sendable {
        static let emptySlot = UInt32.max
        /// In `scanGaps`, an unknown previous scan.
        static let unknownScanGap = Int8.min

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
        private let aems: UnsafeMutablePointer<UInt32>
        /// `Sighting.rssiNotAvailable` for an unknown RSSI.
        private let rssis: UnsafeMutablePointer<Int8>
        /// The adapter's number in `SightingIndex.adapterAddresses` (0: unknown).
        private let adapters: UnsafeMutablePointer<UInt8>
        /// `ScanGap.minutes`, `unknownScanGap` for nil.
        private let scanGaps: UnsafeMutablePointer<Int8>

        init(capacity: Int) {
            self.capacity = capacity
            tags = Self.allocate(capacity, repeating: Self.emptyTag)
            rpis = Self.allocate(capacity, repeating: .zero)
            times = Self.allocate(capacity, repeating: Self.emptySlot)
            aems = Self.allocate(capacity, repeating: 0)
            rssis = Self.allocate(capacity, repeating: 0)
            adapters = Self.allocate(capacity, repeating: 0)
            scanGaps = Self.allocate(capacity, repeating: Self.unknownScanGap)
        }

        deinit {
            free(tags)
            free(rpis)
            free(times)
            free(aems)
            free(rssis)
            free(adapters)
            free(scanGaps)
        }

        /// A copy of every sighting in a new table of `capacity` slots.
        func resized(to capacity: Int) -> Storage {
            let copy = Storage(capacity: capacity)
            for slot in 0..<self.capacity where times[slot] != Self.emptySlot {
                copy.insert(rpi: rpis[slot], aem: aems[slot], rssi: rssis[slot], time: times[slot], adapter: adapters[slot],
                            scanGap: scanGaps[slot])
            }
            return copy
        }

        func insert(rpi: RollingProximityIdentifier, aem: UInt32, rssi: Int8, time: UInt32, adapter: UInt8, scanGap: Int8) {
            var slot = Self.reduce(rpi.high, capacity)
            while tags[slot] != Self.emptyTag { slot = slot + 1 == capacity ? 0 : slot + 1 }
            tags[slot] = Self.tag(rpi)
            rpis[slot] = rpi
            times[slot] = time
            aems[slot] = aem
            rssis[slot] = rssi
            adapters[slot] = adapter
            scanGaps[slot] = scanGap
        }

        var lookup: Lookup {
            Lookup(capacity: capacity, tags: tags, rpis: rpis, times: times, aems: aems, rssis: rssis, adapters: adapters, scanGaps: scanGaps)
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
