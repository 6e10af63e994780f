/// An identifier heard in one scan, by one adapter: what the agent stores of it, one row of its
/// database, with the time and RSSI of every reception. A controller that reports every
/// advertising event (real phones' in a passive scan, Google's RootCanal) hears a phone 11 to 16
/// times a scan: one record instead of a row each. Google's store does the same, a sighting
/// record per scan cycle with each RSSI appended as a byte
/// (storage/ContactRecordDataStore.appendSightingRecord, its compact format).
///
/// Matching weighs each reception by its own time and RSSI, as Google's matching weighs each
/// packet (ExposureMatchingTracer.getValidSightingsForRpi): merging changes what is stored, never
/// what a detection finds.
public struct SightingRecord: Hashable, Sendable {
    /// One reception of the record's identifier.
    public struct Reception: Hashable, Sendable {
        /// Seconds after the record's first reception: a byte, as stored.
        public var secondsAfterFirst: UInt8
        /// nil when the controller reported none.
        public var rssi: Int8?

        public init(secondsAfterFirst: UInt8, rssi: Int8?) {
            self.secondsAfterFirst = secondsAfterFirst
            self.rssi = rssi
        }
    }

    /// Receptions a record holds at most; the next opens another record. A phone advertising at
    /// the protocol's fastest, every 200 ms, is heard 128 times in a record's 25.5 s.
    public static let maximumReceptions = 255
    /// The latest a stored record's reception can lie after its first: its offsets are bytes.
    /// Merging keeps them within `ExposureWindowing.sameScanSeconds`; a record written by hand
    /// may go this far, and matching looks for receptions this far back.
    public static let longestSpanSeconds = Int64(UInt8.max)

    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// Unix seconds of the first reception.
    public var time: Int64
    /// The adapter that received it, such as `hci0`.
    public var adapter: String
    /// That adapter's address, which picks its RSSI correction; nil when unknown.
    public var adapterAddress: BluetoothAddress?
    /// In the order heard, the first at `time`; never empty.
    public private(set) var receptions: [Reception]

    /// A record of `first` alone.
    public init(_ first: Sighting) {
        self.init(rpi: first.rpi, aem: first.aem, time: first.time, adapter: first.adapter, adapterAddress: first.adapterAddress,
                  receptions: [Reception(secondsAfterFirst: 0, rssi: first.rssi)])
    }

    /// A record as stored. `receptions` must not be empty.
    public init(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, time: Int64, adapter: String,
                adapterAddress: BluetoothAddress?, receptions: [Reception]) {
        precondition(!receptions.isEmpty, "a sighting record holds at least its first reception")
        (self.rpi, self.aem, self.time, self.adapter, self.adapterAddress, self.receptions) = (rpi, aem, time, adapter, adapterAddress, receptions)
    }

    /// Whether `sighting` belongs in this record: the same identifier, AEM and adapter, in the same
    /// scan cycle as Google's store counts it (at most 25.5 s after the record's first reception,
    /// ContactRecordDataStore.isSameScanCycle; never before it, as a clock stepped back would
    /// have it), and room for it.
    public func accepts(_ sighting: Sighting) -> Bool {
        sighting.rpi == rpi && sighting.aem == aem && sighting.adapter == adapter && sighting.adapterAddress == adapterAddress
            && (0...ExposureWindowing.sameScanSeconds).contains(sighting.time - time) && receptions.count < Self.maximumReceptions
    }

    /// Adds a reception the record `accepts`.
    public mutating func append(_ sighting: Sighting) {
        precondition(accepts(sighting), "a reception of another identifier, adapter or scan")
        receptions.append(Reception(secondsAfterFirst: UInt8(sighting.time - time), rssi: sighting.rssi))
    }

    /// Each reception as a sighting of its own.
    public var sightings: [Sighting] {
        receptions.map { Sighting(rpi: rpi, aem: aem, rssi: $0.rssi, time: time + Int64($0.secondsAfterFirst), adapter: adapter, adapterAddress: adapterAddress) }
    }
}

/// Receptions merged as they come into sighting records: each joins the latest record of its
/// identifier, AEM and adapter when that record `accepts` it, else it needs a record of its own.
/// A scan of N phones is N records, however often each was heard.
public struct MergedSightings: Sendable {
    public private(set) var records = [SightingRecord]()
    /// Where the latest record of each identifier, AEM and adapter is in `records`, while it may
    /// still take receptions.
    private var open = [Identity: Int]()

    private struct Identity: Hashable, Sendable {
        var rpi: RollingProximityIdentifier
        var aem: AssociatedEncryptedMetadata
        var adapter: String
        var adapterAddress: BluetoothAddress?

        init(_ sighting: Sighting) {
            (rpi, aem, adapter, adapterAddress) = (sighting.rpi, sighting.aem, sighting.adapter, sighting.adapterAddress)
        }
    }

    public init() {}

    /// `sightings` merged in their order.
    public init(_ sightings: some Sequence<Sighting>) {
        for sighting in sightings where !merge(sighting) { start(sighting) }
    }

    public var isEmpty: Bool { records.isEmpty }
    public var count: Int { records.count }

    /// Adds `sighting` to the record it belongs in; false when there is none (`start` makes one).
    public mutating func merge(_ sighting: Sighting) -> Bool {
        guard let index = open[Identity(sighting)], records[index].accepts(sighting) else { return false }
        records[index].append(sighting)
        return true
    }

    /// A record of `sighting` alone, the latest of its identifier, AEM and adapter.
    public mutating func start(_ sighting: Sighting) {
        open[Identity(sighting)] = records.count
        records.append(SightingRecord(sighting))
    }

    /// No record takes receptions any more: the next of each identifier starts a record (a scan
    /// ended, and a scan's records never reach into the next, however close).
    public mutating func closeAll() {
        open.removeAll()
    }

    /// Adds `other`'s records after these, every record closed: what two scans heard, in order.
    public mutating func append(contentsOf other: MergedSightings) {
        records += other.records
        open.removeAll()
    }

    /// Forgets every record.
    public mutating func removeAll() {
        records.removeAll()
        open.removeAll()
    }

    /// Forgets the oldest `count` records.
    public mutating func removeFirst(_ count: Int) {
        records.removeFirst(count)
        open = open.compactMapValues { $0 >= count ? $0 - count : nil }
    }
}
