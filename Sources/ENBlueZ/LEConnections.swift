import CENBluetooth

/// The LE connections the kernel is making, from its connection list (HCIGETCONNLIST on a raw HCI
/// socket). A controller that is initiating a connection refuses LE Set Random Address (Core Vol 4
/// Part E 7.8.4), and the kernel then runs an active scan from the public address.
public enum LEConnections {
    /// Whether the kernel is making an LE connection on `controller` (an LE link in BT_CONNECT: one
    /// being initiated, or waiting for its device to be heard). False when the kernel cannot be
    /// asked (no AF_BLUETOOTH, no such controller), where no scan can start either.
    public static func beingMade(controller: UInt16) -> Bool {
        cen_le_connection_being_made(controller) == 1
    }
}
