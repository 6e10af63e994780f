import CENBluetooth
import FoundationEssentials
import Glibc

/// The controller's advertising TX power, asked over a raw HCI socket (libbluetooth): BlueZ's
/// D-Bus API does not tell it, and receivers need it to compute attenuation.
public enum ControllerTransmitPower {
    public enum Failure: Error, CustomStringConvertible {
        /// The controller could not be asked (errno): no Bluetooth sockets, no such adapter, or no CAP_NET_RAW.
        case unreachable(String, Int32)
        /// The controller answered with an HCI error status.
        case refused(String, UInt8)

        public var description: String {
            switch self {
            case .unreachable(let adapter, let error): return "cannot ask \(adapter) for its TX power: \(String(cString: strerror(error)))"
            case .refused(let adapter, let status): return "\(adapter) refused to tell its TX power (HCI status \(status))"
            }
        }
    }

    /// HCI LE Read Advertising Physical Channel Tx Power on `adapter` (such as hci0), in dBm, on a
    /// socket that hears only the command's answer (`cen_le_read_advertising_tx_power`), which may
    /// take as long as a management command's: libbluetooth's hci_send_req gave up after ten of a
    /// crowd's advertising reports, and agent b's first advertisement after bluetoothd's restart
    /// among the RootCanal crowd carried the configured TX power (-4 dBm where the controller sent -10).
    public static func advertising(adapter: String) throws(Failure) -> Int8 {
        var level: Int8 = 0
        let result = cen_le_read_advertising_tx_power(adapter, Int32(ManagementSocket.replyTimeoutMilliseconds), &level)
        if result < 0 { throw .unreachable(adapter, -result) }
        if result > 0 { throw .refused(adapter, UInt8(result)) }
        return level
    }
}
