import Dispatch
import ENBus

/// The kernel's management interface as the radio uses it: a command and its reply, and the
/// events as they happen. `KernelManagement` is the kernel's; tests put a model in its place.
public protocol ManagementInterface: Sendable {
    func send<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> Command.Reply
    /// Calls `handler` on `queue` with every event until the watch is cancelled. Events of the
    /// commands `send` sends reach it too (the kernel tells every socket but the sender's).
    func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent) -> Void) throws(ManagementError) -> any ManagementWatch
}

public protocol ManagementWatch: AnyObject {
    func cancel()
}

extension ManagementEventWatch: ManagementWatch {}

/// The kernel's management sockets: one per command (`Management.send`), one kept for the events.
/// Not yet one socket kept for the commands: every control socket hears every event, so one kept
/// fills with Device Found between rotations (a reply dropped once its buffer is full), and a
/// reply that came after its command timed out would answer the next command of the same opcode;
/// it needs draining before each command and a new socket after a timeout, and the lab to check it.
public struct KernelManagement: ManagementInterface {
    public init() {}

    public func send<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> Command.Reply {
        try Management.send(command, controller: controller)
    }

    public func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent) -> Void) throws(ManagementError) -> any ManagementWatch {
        try ManagementEventWatch(queue: queue, handler)
    }
}

/// bluetoothd's adapter objects as the radio uses them (`BlueZClient` on the bus; a model in tests).
public protocol BlueZAdapters: Sendable {
    func adapters() throws -> [Adapter]
    func adapter(named name: String) throws -> Adapter?
    func setPowered(_ adapter: Adapter, _ powered: Bool) throws
    func startDiscovery(on adapter: Adapter) throws
    func stopDiscovery(on adapter: Adapter) throws
    func forgetDevices(on adapter: Adapter) throws
    func followDevices(_ handler: @escaping @Sendable (DeviceReport) -> Void) throws -> [SignalSubscription]
    func followService(_ handler: @escaping @Sendable (Bool) -> Void) throws -> [SignalSubscription]
    func followAdapters(_ handler: @escaping @Sendable (_ available: Bool) -> Void) throws -> [SignalSubscription]
}

extension BlueZClient: BlueZAdapters {}
