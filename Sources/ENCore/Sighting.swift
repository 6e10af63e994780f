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

    public init(rpi: RollingProximityIdentifier, aem: AssociatedEncryptedMetadata, rssi: Int8?, time: Int64, adapter: String,
                adapterAddress: BluetoothAddress? = nil) {
        self.rpi = rpi
        self.aem = aem
        self.rssi = rssi
        self.time = time
        self.adapter = adapter
        self.adapterAddress = adapterAddress
    }

    /// Reads an RSSI as BlueZ reports it: 127 (and anything outside Int8) means unknown.
    public static func rssi(reported value: Int16) -> Int8? {
        value == rssiNotAvailable ? nil : Int8(exactly: value)
    }
}
