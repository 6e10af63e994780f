import ENCore

/// The adapter enagentd uses, as enagent.conf's `adapter` and `--adapter` name it: by the
/// kernel's name (hciN, numbered in the order the kernel finds the controllers, which a reboot
/// or a replug may change), or by the controller's Bluetooth address, which stays.
public enum AdapterChoice: Equatable, Sendable, CustomStringConvertible {
    case name(String)
    case address(BluetoothAddress)

    /// hciN or an address such as 00:1A:7D:DA:71:13; nil for anything else.
    public init?(_ text: String) {
        if let address = BluetoothAddress(text) {
            self = .address(address)
        } else if text.hasPrefix("hci"), let number = UInt16(text.dropFirst(3)), "hci\(number)" == text {
            self = .name(text)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .name(let name): return name
        case .address(let address): return address.description
        }
    }

    /// Whether this is the adapter of that name and controller address (BlueZ's Address).
    public func means(name: String, address: String) -> Bool {
        switch self {
        case .name(let wanted): return name == wanted
        case .address(let wanted): return BluetoothAddress(address) == wanted
        }
    }

    /// The name of the adapter this choice means among `adapters` (each name with its
    /// controller's address), nil when none is.
    public func resolve(among adapters: [(name: String, address: String)]) -> String? {
        adapters.first { means(name: $0.name, address: $0.address) }?.name
    }
}
