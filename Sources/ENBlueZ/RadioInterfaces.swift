import Dispatch
import ENBus

/// The kernel's management interface as the radio uses it: a command and its reply, and the
/// events as they happen. `KernelManagement` is the kernel's; tests put a model in its place.
public protocol ManagementInterface: Sendable {
    /// Sends `command`; its reply, and the reply's number among the packets read (the events
    /// numbered below it were read before it).
    func exchange<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> (reply: Command.Reply, read: PacketNumber)
    /// Calls `handler` on `queue` with every event and its number until the watch is cancelled:
    /// every event of other programs and of the kernel's own doing, none that a command `send`
    /// sent caused (the kernel tells every socket but the sender's, and commands and events share
    /// one socket). Events are handed over between the pieces of work on `queue`, or in line by
    /// `deliverPending`.
    func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent, PacketNumber) -> Void) throws(ManagementError) -> any ManagementWatch
    /// Hands the watch's handler, in line, every event read so far, so every one read before the
    /// last reply, but the Device Found events, which only `withReports` (after the rest); called
    /// on the watch's queue. What the kernel says of the controller comes before any report: a
    /// crowd's reports would hold it back for seconds.
    func deliverPending(withReports: Bool)
    /// The Device Found events of `controller` dropped since the last call, because they came
    /// faster than the watch's queue took them.
    func takeDroppedReports(controller: UInt16) -> Int
    /// The watch hears the reports (Device Found) of `controller` only from now on, and every
    /// other event of every controller: the kernel drops the rest before the process reads them.
    func passReports(only controller: UInt16)
}

extension ManagementInterface {
    public func send<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> Command.Reply {
        try exchange(command, controller: controller).reply
    }
}

public protocol ManagementWatch: AnyObject, Sendable {
    func cancel()
}

/// The kernel's management interface through the process's one control socket
/// (`ManagementSocket`), opened at the first command or watch, and again after one failed or a
/// command went unanswered; while it cannot be opened, each command and watch throws
/// `ManagementError.unreachable`.
public struct KernelManagement: ManagementInterface {
    public init() {}

    public func exchange<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> (reply: Command.Reply, read: PacketNumber) {
        try ManagementSocket.kernel.exchange(command, controller: controller)
    }

    public func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent, PacketNumber) -> Void) throws(ManagementError) -> any ManagementWatch {
        try ManagementSocket.kernel.watchEvents(on: queue, handler)
    }

    public func deliverPending(withReports: Bool) { ManagementSocket.kernel.deliverPending(withReports: withReports) }
    public func takeDroppedReports(controller: UInt16) -> Int { ManagementSocket.kernel.takeDroppedReports(controller: controller) }
    public func passReports(only controller: UInt16) { ManagementSocket.kernel.passReports(only: controller) }
}

/// bluetoothd's adapter objects as the radio uses them (`BlueZClient` on the bus; a model in tests).
public protocol BlueZAdapters: Sendable {
    func adapters() throws -> [Adapter]
    func adapter(named name: String) throws -> Adapter?
    /// Whether bluetoothd offers advertising on the adapter named `name`: the end of its setting it up.
    func offersAdvertising(onAdapterNamed name: String) throws -> Bool
    func setPowered(_ adapter: Adapter, _ powered: Bool) throws
    func startDiscovery(on adapter: Adapter) throws
    func stopDiscovery(on adapter: Adapter) throws
    func leaveDiscovery(on adapter: Adapter, whenRead read: @escaping @Sendable () -> Void) throws
    func forgetDevices(on adapter: Adapter) throws
    func followDevices(_ handler: @escaping @Sendable (DeviceReport) -> Void) throws -> [SignalSubscription]
    /// Calls `handler` with each new owner of org.bluez, named as `serviceOwner` names it, and
    /// with nil when bluetoothd leaves the bus.
    func followService(_ handler: @escaping @Sendable (_ owner: String?) -> Void) throws -> [SignalSubscription]
    /// The run of bluetoothd that owns org.bluez now, named apart from every other run on any run
    /// of the bus; nil while none owns it.
    func serviceOwner() throws -> String?
    func followAdapters(_ handler: @escaping @Sendable (AdapterChange) -> Void) throws -> [SignalSubscription]
}

extension BlueZClient: BlueZAdapters {}
