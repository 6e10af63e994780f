/// One reception of an EN advertisement: what was broadcast, how strongly, when and where.
public struct Sighting: Hashable, Sendable {
    /// The RSSI value BlueZ and the HCI spec use for "not available".
    public static let rssiNotAvailable: Int16 = 127

    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// Received signal strength in dBm; nil when the controller did not report one.
    public var rssi: Int8?
    /// Unix seconds.
    public var time: Int64
    /// The adapter that received it, such as `hci0`.
    public var adapter: String
    /// That adapter's address, which picks its RSSI correction; nil when unknown (sightings
    /// recorded before enagent kept it).
    public var adapterAddress: BluetoothAddress?
    /// Unix seconds of the start of the receiving device's scan before the one that made this
    /// sighting, whatever that scan saw; nil when unknown. It sets the scan's `secondsSinceLastScan`.
    public var previousScanTime: Int64?

    public init(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64, adapter: String,
                adapterAddress: BluetoothAddress? = nil, previousScanTime: Int64? = nil) {
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
        self.time = time
        self.adapter = adapter
        self.adapterAddress = adapterAddress
        self.previousScanTime = previousScanTime
    }

    /// Reads an RSSI as BlueZ reports it: 127 (and anything outside Int8) means unknown.
    public static func rssi(reported value: Int16) -> Int8? {
        value == rssiNotAvailable ? nil : Int8(exactly: value)
    }
}

/// How long before a sighting its receiving device last scanned, as Google's matching counts it
/// (SightingRecordWithMetadata.secondsSinceLastScan): the whole minutes of the clock between the
/// two scans' times, at most 5 (ContactTracingFeature.maxMinutesSinceLastScan), and 2 when the
/// previous scan is unknown (defaultMinutesSinceLastScan). So 2 s across a minute's turn count
/// a minute and 119 s within two turns count one.
public struct ScanGap: Hashable, Sendable {
    public static let maximumMinutes: Int8 = 5
    public static let unknownMinutes: Int8 = 2
    /// nil when unknown; negative when the previous scan's time is after the sighting's (Google's
    /// arithmetic keeps the sign).
    public let minutes: Int8?

    /// Google's previous scan time 0 stands for unknown, as nil does.
    public init(time: Int64, previousScanTime: Int64?) {
        guard let previousScanTime, previousScanTime != 0 else {
            minutes = nil
            return
        }
        let difference = time / 60 - previousScanTime / 60
        minutes = Int8(max(-Int64(Int8.max), min(Int64(Self.maximumMinutes), difference)))
    }

    /// A sighting whose device's previous scan is not known.
    public static let unknown = ScanGap(minutes: nil)

    init(minutes: Int8?) { self.minutes = minutes }

    /// The scan instance's `secondsSinceLastScan`.
    public var seconds: Int { 60 * Int(minutes ?? Self.unknownMinutes) }
}
