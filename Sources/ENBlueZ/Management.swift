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

/// The kernel's New Settings events (doc/mgmt-api.txt, 0x0006), as they happen: a control socket
/// kept open, read on `queue`. Every trusted control socket hears every event (devices found
/// while scanning among them), so most are read and dropped.
public final class ManagementSettingsWatch {
    private let source: any DispatchSourceRead

    public init(queue: DispatchQueue, _ changed: @escaping @Sendable (_ controller: UInt16, ReadControllerInformation.Settings) -> Void) throws(ManagementError) {
        let socket = try Management.controlSocket(for: "watching the adapters' settings", flags: Int32(SOCK_NONBLOCK.rawValue))
        source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 1_024)
            while true {
                let count = read(socket, &buffer, buffer.count)
                guard count > 0 else { return }
                if let (controller, settings) = ManagementPacket.newSettings(Array(buffer[..<count])) { changed(controller, settings) }
            }
        }
        source.setCancelHandler { close(socket) }
        source.resume()
    }

    public func cancel() { source.cancel() }

    deinit { source.cancel() }
}

/// The management packet format: opcode or event code, controller index, parameter length,
/// all little-endian, then the parameters.
enum ManagementPacket {
    static let commandComplete: UInt16 = 0x0001
    static let commandStatus: UInt16 = 0x0002

    static func command(_ opcode: UInt16, controller: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        opcode.littleEndianBytes + controller.littleEndianBytes + UInt16(parameters.count).littleEndianBytes + parameters
    }

    static let newSettingsEvent: UInt16 = 0x0006

    /// The controller and its current settings when `event` is New Settings.
    static func newSettings(_ event: [UInt8]) -> (controller: UInt16, settings: ReadControllerInformation.Settings)? {
        guard event.count >= 10, UInt16(littleEndian: event, at: 0) == newSettingsEvent, UInt16(littleEndian: event, at: 4) >= 4 else { return nil }
        return (UInt16(littleEndian: event, at: 2), ReadControllerInformation.Settings(rawValue: UInt32(littleEndian: event, at: 6)))
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
