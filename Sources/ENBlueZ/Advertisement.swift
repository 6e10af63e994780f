import ENBus
import Synchronization

/// An exported `org.bluez.LEAdvertisement1`: a non-connectable broadcast of the EN service
/// with its 20 bytes of service data (RPI ‖ AEM).
public final class Advertisement: Sendable {
    public let path: String
    public let object: ExportedObject
    private let released = ReleaseFlag()

    /// Advertising interval bounds in milliseconds (protocol.md §2: 200–270 ms).
    public static let interval = (minimum: UInt32(200), maximum: UInt32(270))

    /// MinInterval/MaxInterval are offered always: BlueZ ignores them where it cannot set them.
    public init(path: String, serviceData: [UInt8]) {
        self.path = path
        let properties = [
            DBusProperty("Type", "s", get: { .string("broadcast") }),
            DBusProperty("ServiceUUIDs", "as", get: { .strings(["FD6F"]) }),
            DBusProperty("ServiceData", "a{sv}", get: { .properties(["FD6F": .bytes(serviceData)]) }),
            DBusProperty("MinInterval", "u", get: { .uint32(Advertisement.interval.minimum) }),
            DBusProperty("MaxInterval", "u", get: { .uint32(Advertisement.interval.maximum) }),
        ]
        let released = released
        object = ExportedObject(path: path, interfaces: [
            DBusInterface(BlueZ.advertisementInterface, methods: [
                DBusMethod("Release") { _ in
                    released.set()
                    return []
                },
            ], properties: properties),
        ])
    }

    /// Whether bluetoothd has released it (it did so itself, for example when the adapter went away).
    public var wasReleased: Bool { released.isSet }
}

/// Set once bluetoothd calls Release.
private final class ReleaseFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
