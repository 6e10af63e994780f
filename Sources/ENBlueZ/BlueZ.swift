import ENBus

/// Names BlueZ uses on the bus (bluez doc/org.bluez.*.rst).
public enum BlueZ {
    public static let service = "org.bluez"
    public static let adapterInterface = "org.bluez.Adapter1"
    public static let deviceInterface = "org.bluez.Device1"
    public static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    public static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    /// The Exposure Notification service, as BlueZ spells 16-bit UUIDs in full.
    public static let exposureNotificationUUID = "0000fd6f-0000-1000-8000-00805f9b34fb"
    static let callTimeout = Duration.seconds(10)
    /// libdbus's DBUS_TIMEOUT_INFINITE: a call answered whenever its peer answers or leaves the bus.
    static let noTimeout = Duration.milliseconds(Int(Int32.max))
    /// The object path of the adapter named `name` (hci0: /org/bluez/hci0).
    public static func adapterPath(_ name: String) -> String { "/org/bluez/" + name }
    /// bluetoothd's "busy": a StartDiscovery from a client whose discovery runs already, or one the kernel refused.
    public static let inProgressError = "org.bluez.Error.InProgress"
}

/// A Bluetooth adapter as BlueZ describes it.
public struct Adapter: Equatable, Sendable {
    /// Such as `/org/bluez/hci0`.
    public var path: String
    public var address: String
    public var powered: Bool
    /// Whether it can advertise (it has LEAdvertisingManager1).
    public var canAdvertise: Bool

    public init(path: String, address: String, powered: Bool, canAdvertise: Bool) {
        self.path = path
        self.address = address
        self.powered = powered
        self.canAdvertise = canAdvertise
    }

    /// The adapter's name, such as `hci0`.
    public var name: String { Self.name(ofPath: path) }
    /// The name of the adapter at a BlueZ object path (`/org/bluez/hci0` is hci0).
    public static func name(ofPath path: String) -> String { String(path.split(separator: "/").last ?? "") }
    /// The kernel's controller index (0 for hci0).
    public var index: UInt16? { Self.index(ofName: name) }
    /// The kernel's controller index of the adapter named (0 for hci0).
    public static func index(ofName name: String) -> UInt16? { name.hasPrefix("hci") ? UInt16(name.dropFirst(3)) : nil }
}

/// An adapter that bluetoothd offered, took away, or saw powered on or off.
public struct AdapterChange: Equatable, Sendable {
    public enum Kind: Equatable, Sendable { case appeared, vanished, poweredOn, poweredOff }
    /// Such as `hci0`.
    public var adapter: String
    public var kind: Kind

    public init(adapter: String, kind: Kind) {
        self.adapter = adapter
        self.kind = kind
    }

    /// Whether the adapter is there and powered after the change.
    public var available: Bool { kind == .appeared || kind == .poweredOn }
}

/// What a Device1 object said about an advertiser: its EN service data and signal strength.
public struct DeviceReport: Equatable, Sendable {
    public var devicePath: String
    /// The adapter that received it, such as `hci0`.
    public var adapter: String
    /// The 0xFD6F service data, the last the device carried.
    public var serviceData: [UInt8]
    /// RSSI in dBm as BlueZ has it for the device (127: not available); nil when unknown.
    public var rssi: Int16?
}
