import CENBluetooth
import Dispatch
import FoundationEssentials
import Glibc

/// One command of the kernel's Bluetooth management interface (BlueZ's doc/mgmt-api.txt): its
/// opcode, its parameters as the kernel reads them, and how its reply is decoded. Encoding and
/// decoding are pure, so they are tested byte by byte without a radio.
public protocol ManagementCommand {
    associatedtype Reply
    static var opcode: UInt16 { get }
    static var name: String { get }
    var parameters: [UInt8] { get }
    static func decode(_ reply: [UInt8]) throws(ManagementError) -> Reply
}

public enum ManagementError: Error, Equatable, CustomStringConvertible {
    /// The socket could not be opened or used (errno): no AF_BLUETOOTH, no CAP_NET_ADMIN.
    case unreachable(String, Int32)
    /// The kernel answered with a management status (doc/mgmt-api.txt, "Error Codes").
    case refused(String, controller: UInt16, status: UInt8)
    case noReply(String, controller: UInt16)
    case malformedReply(String, [UInt8])

    public var description: String {
        switch self {
        case .unreachable(let what, let error):
            return "cannot use the kernel's Bluetooth management socket for \(what): \(String(cString: strerror(error)))"
        case .refused(let name, let controller, let status):
            return "hci\(controller) refused \(name): \(Self.statusName(status)) (management status 0x\(String(status, radix: 16)))"
        case .noReply(let name, let controller): return "hci\(controller) did not answer \(name) in time"
        case .malformedReply(let name, let bytes): return "the kernel's reply to \(name) is malformed (\(bytes.count) bytes)"
        }
    }

    static func statusName(_ status: UInt8) -> String {
        let names: [UInt8: String] = [0x01: "Unknown Command", 0x03: "Failed", 0x07: "No Resources", 0x0A: "Busy", 0x0B: "Rejected", 0x0C: "Not Supported",
                                      0x0D: "Invalid Parameters", 0x0F: "Not Powered", 0x11: "Invalid Index", 0x14: "Permission Denied"]
        return names[status] ?? "error"
    }

    /// The management status of a controller out of advertising sets (the HCI status Memory
    /// Capacity Exceeded).
    public static let noResources: UInt8 = 0x07

    public var status: UInt8? {
        if case .refused(_, _, let status) = self { return status }
        return nil
    }
}

/// The management socket (HCI_CHANNEL_CONTROL): one command and its answer at a time.
/// A socket per command keeps no stale events between commands, which are minutes apart.
public enum Management {
    /// How long the kernel may take to answer (it waits for the controller's own answers).
    static let replyTimeoutMilliseconds: Int32 = 3_000

    public static func send<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> Command.Reply {
        let socket = try controlSocket(for: Command.name)
        defer { close(socket) }
        let packet = ManagementPacket.command(Command.opcode, controller: controller, command.parameters)
        guard write(socket, packet, packet.count) == packet.count else { throw .unreachable(Command.name, errno) }

        var buffer = [UInt8](repeating: 0, count: 1_024)
        let deadline = ContinuousClock.now + .milliseconds(Int(replyTimeoutMilliseconds))
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let left = deadline - ContinuousClock.now
            guard poll(&poller, 1, Int32(left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000) + 1) == 1 else { break }
            let count = read(socket, &buffer, buffer.count)
            guard count >= 0 else {
                if errno == EINTR { continue }
                throw .unreachable(Command.name, errno)
            }
            // Other events (devices found, settings changed) arrive on every management socket.
            guard let answer = ManagementPacket.answer(Array(buffer[..<count]), to: Command.opcode, controller: controller) else { continue }
            guard answer.status == 0 else { throw .refused(Command.name, controller: controller, status: answer.status) }
            return try Command.decode(answer.parameters)
        }
        throw .noReply(Command.name, controller: controller)
    }
}

extension Management {
    /// A socket on the control channel, which hears every management event of every controller.
    static func controlSocket(for what: String, flags: Int32 = 0) throws(ManagementError) -> Int32 {
        let socket = Glibc.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | flags, BTPROTO_HCI)
        guard socket >= 0 else { throw .unreachable(what, errno) }
        var address = sockaddr_hci(hci_family: sa_family_t(AF_BLUETOOTH), hci_dev: UInt16(HCI_DEV_NONE), hci_channel: UInt16(HCI_CHANNEL_CONTROL))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        guard bound == 0 else {
            let error = errno
            close(socket)
            throw .unreachable(what, error)
        }
        return socket
    }
}

/// The kernel's management events as they happen (`ManagementEvent`: settings changed, devices
/// heard, monitors removed): a control socket kept open, read on `queue`. Every trusted control
/// socket hears every event of every controller, so most are read and dropped.
public final class ManagementEventWatch {
    private let source: any DispatchSourceRead

    public init(queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent) -> Void) throws(ManagementError) {
        let socket = try Management.controlSocket(for: "watching the adapters' events", flags: Int32(SOCK_NONBLOCK.rawValue))
        source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
        source.setEventHandler {
            // An event's parameters are at most 65535 bytes (Device Found carries up to 31 + 31 of AD).
            var buffer = [UInt8](repeating: 0, count: 1_024)
            while true {
                let count = read(socket, &buffer, buffer.count)
                guard count > 0 else { return }
                if let event = ManagementPacket.event(Array(buffer[..<count])) { handler(event) }
            }
        }
        source.setCancelHandler { close(socket) }
        source.resume()
    }

    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}

/// The management events the agent acts on (doc/mgmt-api.txt).
public enum ManagementEvent: Equatable, Sendable {
    /// New Settings (0x0006): the controller's current settings.
    case newSettings(controller: UInt16, ReadControllerInformation.Settings)
    /// Device Found (0x0012), or Advertisement Monitor Device Found (0x002F), which the kernel
    /// sends instead while it scans for monitors and no discovery runs.
    case deviceFound(controller: UInt16, DeviceFound)
    /// Advertisement Monitor Removed (0x002C): by whichever program, bluetoothd's start among them.
    case monitorRemoved(controller: UInt16, handle: UInt16)
    /// Advertising Added (0x0023): an instance added by another socket than the one that hears it.
    case advertisingAdded(controller: UInt16, instance: UInt8)
    /// Advertising Removed (0x0024): an instance removed by another socket (bluetoothd's start
    /// removes every one).
    case advertisingRemoved(controller: UInt16, instance: UInt8)
    /// Discovering (0x0013): a discovery of these address types (Start Discovery's) started or
    /// ended, whichever program's; one a bluetoothd that died left runs on until its timeout.
    case discovering(controller: UInt16, addressTypes: UInt8, active: Bool)
}

/// An advertisement the controller heard: the sender's address as on the air (6 bytes,
/// little-endian), its type, the RSSI (127: not available), the kernel's flags and the
/// advertising (and scan response) data.
public struct DeviceFound: Equatable, Sendable {
    public var address: [UInt8]
    public var addressType: UInt8
    public var rssi: Int8
    public var flags: UInt32
    public var data: [UInt8]
}

/// The management packet format: opcode or event code, controller index, parameter length,
/// all little-endian, then the parameters.
enum ManagementPacket {
    static let commandComplete: UInt16 = 0x0001
    static let commandStatus: UInt16 = 0x0002

    static func command(_ opcode: UInt16, controller: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        opcode.littleEndianBytes + controller.littleEndianBytes + UInt16(parameters.count).littleEndianBytes + parameters
    }

    static let newSettingsEvent: UInt16 = 0x0006, deviceFoundEvent: UInt16 = 0x0012, discoveringEvent: UInt16 = 0x0013
    static let advertisingAddedEvent: UInt16 = 0x0023, advertisingRemovedEvent: UInt16 = 0x0024, monitorRemovedEvent: UInt16 = 0x002C, monitorDeviceFoundEvent: UInt16 = 0x002F

    /// `packet` as an event the agent acts on; nil for any other, or one cut short.
    static func event(_ packet: [UInt8]) -> ManagementEvent? {
        guard packet.count >= 6 else { return nil }
        let code = UInt16(littleEndian: packet, at: 0), controller = UInt16(littleEndian: packet, at: 2)
        let length = Int(UInt16(littleEndian: packet, at: 4))
        guard packet.count >= 6 + length else { return nil }
        let parameters = Array(packet[6..<(6 + length)])
        switch code {
        case newSettingsEvent where length >= 4:
            return .newSettings(controller: controller, ReadControllerInformation.Settings(rawValue: UInt32(littleEndian: parameters, at: 0)))
        case advertisingAddedEvent where length >= 1:
            return .advertisingAdded(controller: controller, instance: parameters[0])
        case advertisingRemovedEvent where length >= 1:
            return .advertisingRemoved(controller: controller, instance: parameters[0])
        case discoveringEvent where length >= 2:
            return .discovering(controller: controller, addressTypes: parameters[0], active: parameters[1] != 0)
        case monitorRemovedEvent where length >= 2:
            return .monitorRemoved(controller: controller, handle: UInt16(littleEndian: parameters, at: 0))
        case deviceFoundEvent, monitorDeviceFoundEvent:
            // Advertisement Monitor Device Found puts the monitor's handle before Device Found's fields.
            let fields = code == monitorDeviceFoundEvent ? Array(parameters.dropFirst(2)) : parameters
            guard fields.count >= 14 else { return nil }
            let dataLength = Int(UInt16(littleEndian: fields, at: 12))
            guard fields.count >= 14 + dataLength else { return nil }
            return .deviceFound(controller: controller, DeviceFound(address: Array(fields[0..<6]), addressType: fields[6], rssi: Int8(bitPattern: fields[7]),
                                                                    flags: UInt32(littleEndian: fields, at: 8), data: Array(fields[14..<(14 + dataLength)])))
        default:
            return nil
        }
    }

    /// The status and return parameters when `event` answers `opcode` on `controller`.
    static func answer(_ event: [UInt8], to opcode: UInt16, controller: UInt16) -> (status: UInt8, parameters: [UInt8])? {
        guard event.count >= 9 else { return nil }
        let code = UInt16(littleEndian: event, at: 0), index = UInt16(littleEndian: event, at: 2)
        let length = Int(UInt16(littleEndian: event, at: 4))
        guard code == commandComplete || code == commandStatus, index == controller, event.count >= 6 + length, length >= 3,
              UInt16(littleEndian: event, at: 6) == opcode else { return nil }
        return (event[8], Array(event[9..<(6 + length)]))
    }
}

extension UInt16 {
    var littleEndianBytes: [UInt8] { [UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8)] }

    init(littleEndian bytes: [UInt8], at offset: Int) {
        self = UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
}

extension UInt32 {
    var littleEndianBytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }

    init(littleEndian bytes: [UInt8], at offset: Int) {
        self = (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}
