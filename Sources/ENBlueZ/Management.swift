import CENBluetooth
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

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

/// The kernel's management interface through one control socket (HCI_CHANNEL_CONTROL), kept open
/// for the commands and the events alike. Every control socket hears every event of every
/// controller, so a reader drains it all the time (Device Found arrives by the hundred a second
/// during a scan, and the kernel drops whatever a full socket cannot take, a reply too); it hands
/// Command Complete and Command Status to the one command waiting and the events to the watch.
///
/// The kernel sends the events of a command to every control socket but the sender's (mgmt.c:
/// `mgmt_event`'s skip_sk), so the watch does not hear what this process's own commands caused,
/// only other programs' and the kernel's own (sk NULL: power-off, the controller ending a set).
final class ManagementSocket: Sendable {
    /// How long the kernel may take to answer (it waits for the controller's own answers).
    static let replyTimeoutMilliseconds = 3_000

    /// The process's socket, opened at its first use.
    static let kernel = ManagementSocket(open: openControlSocket)

    /// The receive buffer the socket asks for, in bytes (the kernel doubles it for its overhead).
    /// The default (net.core.rmem_default, 208 kB) holds some 200 Device Found events: a crowd
    /// sends thousands a second, so a reader held up for a tenth of a second let it fill, and
    /// then the kernel drops events and the replies to commands alike, failing the command with
    /// ENOMEM (mgmt_cmd_complete's sock_queue_rcv_skb; the RootCanal crowd lab's "Read Controller
    /// Information: Cannot allocate memory"). 4 MiB holds about 4,000, a second or more of a crowd;
    /// memory only while they wait.
    static let receiveBufferBytes: Int32 = 4 << 20

    /// Device Found events of one controller waiting for the watch, at most, before a new one is
    /// dropped (and counted, `takeDroppedReports`); every other event waits its turn, and another
    /// controller's reports (another program's scan, a second agent's) crowd out none of these.
    /// A crowd's reports can come faster than a slow machine's agent takes them, and then each
    /// batch grew on the one before: in the RootCanal crowd of 300 on the emulated guest an agent's
    /// scan end and rotation waited 155 s behind them, and the waiting events took memory without end.
    /// A report of an advertisement already waiting joins it (`DeviceFound.laterRSSIs`), so this
    /// bounds the advertisers waiting, not their receptions.
    static let waitingReportsAtMost = 4_000
    /// Receptions one waiting report takes, at most; the next of its advertisement waits as a
    /// report of its own.
    static let receptionsPerReportAtMost = 256
    /// Events handed over in one turn of the watch's queue, at most: the queue's timers and calls
    /// take their turns between.
    static let deliveredPerTurn = 256

    private let open: @Sendable () -> Int32
    private let replyTimeout: DispatchTimeInterval
    /// One command in flight at a time: a reply names only its opcode and controller. Held also
    /// while the socket is opened or replaced, so no command writes to a descriptor being closed.
    private let commandTurn = DispatchSemaphore(value: 1)
    private let readerQueue = DispatchQueue(label: "enagent.management-socket")
    private let state = Mutex(State())

    private struct State {
        var connection: Connection?
        var waiting: Waiting?
        var watch: Watch.Registration?
        /// Packets read so far, on every socket this one opened: each packet's number.
        var read = PacketNumber(0)
        /// Events read that the watch has not been handed yet, each in the order read: the
        /// Device Found events (`reports`) apart, behind the rest, which say what the controller
        /// does (`events`). Those go first: a crowd's thousands of reports kept the New Settings
        /// of an adapter turned connectable from the radio for 14 s, while the kernel sent the EN
        /// advertisement as connectable (the RootCanal crowd of 2026-11-30 19:40).
        var events = [(ManagementEvent, PacketNumber)]()
        var reports = [WaitingReport]()
        /// Where the report of each advertisement (`WaitingReport.advertisement`) waits in
        /// `reports`, counted from the first report ever waiting (`reportsTaken` before it).
        var waitingAdvertisements = [[UInt8]: Int]()
        var reportsTaken = 0
        /// Device Found events waiting in `reports`, and those dropped since taken, by controller.
        var waitingReports = [UInt16: Int]()
        var droppedReports = [UInt16: Int]()
        /// The watch whose turn (`deliverTurn`) is on its queue: one at a time. A turn for each
        /// batch that found `events` empty let them pile up, as `deliverPending` empties them
        /// between batches (every 50 ms while bluetoothd is asked): in a flood each lived on,
        /// and the queue's timers waited behind all of their batches (the RootCanal crowd of
        /// 2026-11-30 18:20: an agent's scan of 3 s ran 60 s).
        var queuedTurn: UInt64?
        /// Watches made so far (`Watch.Registration.id`).
        var watches: UInt64 = 0
        /// The controller whose reports the socket takes (`passReports`); every controller's
        /// until the first call.
        var reportsOf: UInt16?

        mutating func clearEvents() {
            events = []
            reports = []
            waitingAdvertisements = [:]
            waitingReports = [:]
        }

        /// Adds a reception of `advertisement` (a Device Found packet with its RSSI left out) to
        /// the report of it waiting; false when none waits with room for it.
        mutating func join(_ advertisement: [UInt8], rssi: Int8) -> Bool {
            guard let position = waitingAdvertisements[advertisement], case let index = position - reportsTaken,
                  reports[index].laterRSSIs.count + 1 < ManagementSocket.receptionsPerReportAtMost else { return false }
            reports[index].laterRSSIs.append(rssi)
            return true
        }

        /// `report` waits for the watch, behind the reports before it; the next of its
        /// advertisement joins it.
        mutating func wait(_ report: WaitingReport) {
            waitingAdvertisements[report.advertisement] = reportsTaken + reports.count
            waitingReports[report.controller, default: 0] += 1
            reports.append(report)
        }

        /// Takes up to `limit` of the events waiting, the reports after the rest (none unless
        /// `withReports`).
        mutating func take(atMost limit: Int, withReports: Bool) -> [(ManagementEvent, PacketNumber)] {
            let others = min(limit, events.count)
            let batch = Array(events.prefix(others))
            events.removeFirst(others)
            guard withReports else { return batch }
            let count = min(limit - others, reports.count)
            let taken = reports.prefix(count)
            reports.removeFirst(count)
            reportsTaken += count
            return batch + taken.map { report in
                waitingAdvertisements[report.advertisement] = nil
                waitingReports[report.controller]? -= 1
                var found = report.found
                found.laterRSSIs = report.laterRSSIs
                return (.deviceFound(controller: report.controller, found), report.read)
            }
        }

        var isEmpty: Bool { events.isEmpty && reports.isEmpty }
    }

    /// A Device Found event waiting for the watch, and the RSSIs of its advertisement's
    /// receptions read since: a crowd's phone is heard a dozen times in a scan, and each report
    /// handed over on its own outran a slow machine's agent, which then dropped whole advertisers
    /// (the RootCanal crowd in CI, 2026-11-30 22:37: 637 reports of a scan of 3 s dropped, 125 of
    /// its 454 advertisers lost, the guest's processors 6 % idle).
    private struct WaitingReport {
        var controller: UInt16
        var found: DeviceFound
        /// The packet without its RSSI (`ManagementPacket.report`).
        var advertisement: [UInt8]
        var read: PacketNumber
        var laterRSSIs = [Int8]()
    }

    /// An open socket and its reader, which closes the descriptor once cancelled. The reader is
    /// behind a lock (Dispatch on Linux does not mark a source Sendable; one may be cancelled,
    /// suspended and resumed from any thread), with whether it stopped.
    private final class Connection: Sendable {
        let descriptor: Int32
        private let reader: Mutex<Reader>

        private struct Reader {
            let source: any DispatchSourceRead
            /// The reader met the end of the socket or an error, and stopped (suspended) reading.
            var stopped = false
        }

        init(descriptor: Int32, queue: DispatchQueue) {
            self.descriptor = descriptor
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
            source.setCancelHandler { Glibc.close(descriptor) }
            reader = Mutex(Reader(source: source))
        }

        func start(reading: @escaping @Sendable () -> Void) {
            reader.withLock { reader in
                reader.source.setEventHandler(handler: reading)
                reader.source.resume()
            }
        }

        var failed: Bool { reader.withLock { $0.stopped } }

        /// At the socket's end or an error, which would wake the reader for ever; not once closing.
        func fail() {
            reader.withLock { reader in
                guard !reader.source.isCancelled else { return }
                reader.source.suspend()
                reader.stopped = true
            }
        }

        /// Stops reading and closes the descriptor (in the reader's cancel handler, which a
        /// suspended reader runs once resumed).
        func close() {
            reader.withLock { reader in
                reader.source.cancel()
                if reader.stopped { reader.source.resume() }
            }
        }
    }

    /// The command waiting for its answer, and the answer once read (or the socket's failure).
    private struct Waiting {
        var opcode: UInt16
        var controller: UInt16
        var arrived: DispatchSemaphore
        var answer: (status: UInt8, parameters: [UInt8], read: PacketNumber)?
        var failure: Int32?
    }

    /// `open` gives a socket bound to the control channel (tests: one end of a socket pair), or,
    /// as socket(2), -1 and errno.
    init(replyTimeout: DispatchTimeInterval = .milliseconds(replyTimeoutMilliseconds), open: @escaping @Sendable () -> Int32) {
        self.replyTimeout = replyTimeout
        self.open = open
    }

    deinit { state.withLock { $0.connection }?.close() }

    func exchange<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> (reply: Command.Reply, read: PacketNumber) {
        commandTurn.wait()
        defer { commandTurn.signal() }
        let connection = try connected(for: Command.name)
        let arrived = DispatchSemaphore(value: 0)
        state.withLock { $0.waiting = Waiting(opcode: Command.opcode, controller: controller, arrived: arrived) }
        let packet = ManagementPacket.command(Command.opcode, controller: controller, command.parameters)
        // The kernel fails the write itself for some commands (ENETDOWN: the controller is down);
        // the socket stays good.
        guard Glibc.send(connection.descriptor, packet, packet.count, Int32(MSG_NOSIGNAL)) == packet.count else {
            let error = errno
            state.withLock { $0.waiting = nil }
            throw .unreachable(Command.name, error)
        }
        _ = arrived.wait(timeout: .now() + replyTimeout)
        let waited = state.withLock { state in defer { state.waiting = nil }; return state.waiting }
        if let answer = waited?.answer {
            guard answer.status == 0 else { throw .refused(Command.name, controller: controller, status: answer.status) }
            return (try Command.decode(answer.parameters), answer.read)
        }
        if let failure = waited?.failure { throw .unreachable(Command.name, failure) }
        replace(connection)
        throw .noReply(Command.name, controller: controller)
    }

    /// Calls `handler` on `queue` with every event and its number, in order, until the watch is
    /// cancelled; one watch at a time (a new one takes the last one's place).
    func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent, PacketNumber) -> Void) throws(ManagementError) -> Watch {
        commandTurn.wait()
        defer { commandTurn.signal() }
        _ = try connected(for: "watching the adapters' events")
        return state.withLock { state in
            state.watches += 1
            state.watch = Watch.Registration(id: state.watches, queue: queue, handler: handler)
            state.clearEvents()
            return Watch(socket: self, id: state.watches)
        }
    }

    /// Hands the watch, in line, every event read so far (every one read before the last reply)
    /// but the reports, which only with `withReports`, after the rest. Called on the watch's
    /// queue, where the events would otherwise wait for the work in progress to end.
    ///
    /// One batch, the events read until now: those read meanwhile wait for the watch's turn on
    /// the queue (`route`), so that under a crowd's Device Found the queue's timers and calls take
    /// their turns between batches, where a block for each event queued them behind thousands.
    func deliverPending(withReports: Bool) { _ = deliver(atMost: .max, withReports: withReports) }

    /// The watch `id`'s own turn on its queue: at most `deliveredPerTurn` events, and one turn
    /// more for the rest, after what else waits on the queue; none once nothing waits.
    private func deliverTurn(of id: UInt64, on queue: DispatchQueue) {
        guard deliver(atMost: Self.deliveredPerTurn, turnOf: id) else { return }
        queue.async { [weak self] in self?.deliverTurn(of: id, on: queue) }
    }

    /// Hands the watch up to `limit` events waiting (`State.take`); whether more wait. `turnOf`:
    /// called as that watch's turn, which ends when this returns false.
    private func deliver(atMost limit: Int, withReports: Bool = true, turnOf turn: UInt64? = nil) -> Bool {
        guard let (batch, watch, more) = state.withLock({ state -> ([(ManagementEvent, PacketNumber)], Watch.Registration, Bool)? in
            guard let watch = state.watch, turn == nil || watch.id == turn, !state.isEmpty else {
                if let turn, state.queuedTurn == turn { state.queuedTurn = nil }
                return nil
            }
            let batch = state.take(atMost: limit, withReports: withReports)
            let more = !state.isEmpty
            // An event read from now on queues the next turn.
            if turn != nil, !more { state.queuedTurn = nil }
            return (batch, watch, more)
        }) else { return false }
        dispatchPrecondition(condition: .onQueue(watch.queue))
        for (event, read) in batch {
            // Not after the watch was cancelled.
            guard state.withLock({ $0.watch?.id == watch.id }) else { return false }
            watch.handler(event, read)
        }
        return more
    }

    /// From now on the kernel drops the reports of every controller but `controller` before they
    /// reach the socket (`cen_management_pass_reports_of`, on this socket and each one opened
    /// after): every management socket hears every controller's Device Found, and a second
    /// adapter's scan (another agent's, another program's) doubled what the reader had to keep up
    /// with in the RootCanal crowd, where New Settings then waited behind them. A socket the filter
    /// cannot go on (none is refused on Linux) takes them all, as before.
    func passReports(only controller: UInt16) {
        commandTurn.wait()
        defer { commandTurn.signal() }
        // A socket opened later gets the filter as it opens (`connected`): only a change is news.
        guard let connection = state.withLock({ state -> Connection?? in
            guard state.reportsOf != controller else { return nil }
            state.reportsOf = controller
            return .some(state.connection)
        }) else { return }
        if let connection { _ = cen_management_pass_reports_of(connection.descriptor, controller) }
    }

    /// The Device Found events of `controller` dropped since the last call, as they came faster
    /// than the watch's queue took them (`waitingReportsAtMost`).
    func takeDroppedReports(controller: UInt16) -> Int {
        state.withLock { $0.droppedReports.removeValue(forKey: controller) ?? 0 }
    }

    /// The events' way to a handler; cancelled (or released) it hears no more.
    final class Watch: ManagementWatch {
        struct Registration {
            /// The watch's number, in the order made: none is another's, also once that one is gone.
            var id: UInt64
            var queue: DispatchQueue
            var handler: @Sendable (ManagementEvent, PacketNumber) -> Void
        }

        private let socket: ManagementSocket
        private let id: UInt64

        init(socket: ManagementSocket, id: UInt64) { (self.socket, self.id) = (socket, id) }

        func cancel() {
            socket.state.withLock { state in
                guard state.watch?.id == id else { return }
                state.watch = nil
                state.clearEvents()
            }
        }

        deinit { cancel() }
    }

    /// The open socket, opened now if there is none or the last one failed. Called in the command turn.
    private func connected(for what: String) throws(ManagementError) -> Connection {
        if let connection = state.withLock({ $0.connection }) {
            guard connection.failed else { return connection }
            discard(connection)
        }
        let descriptor = open()
        guard descriptor >= 0 else { throw .unreachable(what, errno) }
        guard fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK) == 0 else {
            let error = errno
            close(descriptor)
            throw .unreachable(what, error)
        }
        Self.enlargeReceiveBuffer(of: descriptor)
        if let controller = state.withLock({ $0.reportsOf }) { _ = cen_management_pass_reports_of(descriptor, controller) }
        let connection = Connection(descriptor: descriptor, queue: readerQueue)
        state.withLock { $0.connection = connection }
        connection.start { [weak self, weak connection] in
            if let self, let connection { self.readPackets(from: connection) }
        }
        return connection
    }

    private func discard(_ connection: Connection) {
        state.withLock { if $0.connection === connection { $0.connection = nil } }
        connection.close()
    }

    /// A command went unanswered: its reply may still come, and on this socket it would answer the
    /// next command of the same opcode, so the socket goes. A new one is opened at once while a
    /// watch listens (else at the next command). Events the kernel queued on the old socket and
    /// the reader had not read, and those sent while no socket was open, are lost: a device heard
    /// (the next advertisement of it comes within a second), and at worst a change the radio would
    /// have acted on at once (a turn to connectable, another program's advertisement, a removed
    /// advertisement or monitor, a discovery's start or end), which it then finds at its next
    /// rotation or scan, as it does without a watch. Events the unanswered command causes later
    /// reach the new socket, which is not its sender: like another program's, which they are
    /// as good as (the radio took the command as failed).
    private func replace(_ connection: Connection) {
        discard(connection)
        if state.withLock({ $0.watch != nil }) { _ = try? connected(for: "watching the adapters' events") }
    }

    /// Reads every packet waiting: answers go to the command waiting for one (none: an answer
    /// whose command gave up, dropped), events to the watch.
    private func readPackets(from connection: Connection) {
        // An event's parameters are at most 65535 bytes (Device Found carries up to 31 + 31 of AD).
        var buffer = [UInt8](repeating: 0, count: 1_024)
        while true {
            let count = read(connection.descriptor, &buffer, buffer.count)
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                // The socket is gone (or broken): the command waiting hears so, the next opens another.
                let error = count == 0 ? EPIPE : errno
                connection.fail()
                state.withLock { state in
                    guard state.connection === connection, state.waiting != nil else { return }
                    state.waiting?.failure = error
                    state.waiting?.arrived.signal()
                }
                return
            }
            route(Array(buffer[..<count]))
        }
    }

    /// Numbers `packet` in the order read and routes it: an event waits for the watch (handed
    /// over on its queue, the reports after the rest, or sooner by `deliverPending`), so every
    /// event read before a reply is there for the command's sender to ask for once the reply is
    /// in. An event queues the watch's turn unless it is queued already (`queuedTurn`). A Device
    /// Found of an advertisement waiting joins its report; one beyond `waitingReportsAtMost` is
    /// dropped and counted.
    private func route(_ packet: [UInt8]) {
        guard packet.count < 2 || ![ManagementPacket.commandComplete, ManagementPacket.commandStatus].contains(UInt16(littleEndian: packet, at: 0)) else {
            state.withLock { state in
                state.read = state.read.next
                guard let waiting = state.waiting, waiting.answer == nil,
                      let answer = ManagementPacket.answer(packet, to: waiting.opcode, controller: waiting.controller) else { return }
                state.waiting?.answer = (answer.status, answer.parameters, state.read)
                waiting.arrived.signal()
            }
            return
        }
        // A report of an advertisement waiting joins it, and one beyond what may wait goes, before
        // either is decoded: this one reader has to keep up with the kernel, or a command's reply
        // waits behind the reports (and fails as late).
        let report = ManagementPacket.report(packet)
        if let report, state.withLock({ state in
            guard state.watch != nil else { return false }
            if state.join(report.advertisement, rssi: report.rssi) {
                state.read = state.read.next
                return true
            }
            guard state.waitingReports[report.controller, default: 0] >= Self.waitingReportsAtMost else { return false }
            state.read = state.read.next
            state.droppedReports[report.controller, default: 0] += 1
            return true
        }) {
            return
        }
        guard let event = ManagementPacket.event(packet), let watch = state.withLock({ state -> Watch.Registration? in
            state.read = state.read.next
            guard let watch = state.watch else { return nil }
            if case .deviceFound(let controller, let found) = event, let report {
                state.wait(WaitingReport(controller: controller, found: found, advertisement: report.advertisement, read: state.read))
            } else {
                state.events.append((event, state.read))
            }
            guard state.queuedTurn != watch.id else { return nil }
            state.queuedTurn = watch.id
            return watch
        }) else { return }
        watch.queue.async { [weak self] in self?.deliverTurn(of: watch.id, on: watch.queue) }
    }

    /// Asks for `receiveBufferBytes`: past net.core.rmem_max with CAP_NET_ADMIN, which the
    /// management socket's commands need anyway (enagentd.service grants it), else up to that
    /// limit. A smaller buffer still works, as before a crowd.
    static func enlargeReceiveBuffer(of descriptor: Int32) {
        var bytes = receiveBufferBytes
        let size = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(descriptor, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, size) != 0 {
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bytes, size)
        }
    }

    /// A socket on the control channel, which hears every management event of every controller.
    static func openControlSocket() -> Int32 {
        let socket = Glibc.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard socket >= 0 else { return -1 }
        var address = sockaddr_hci(hci_family: sa_family_t(AF_BLUETOOTH), hci_dev: UInt16(HCI_DEV_NONE), hci_channel: UInt16(HCI_CHANNEL_CONTROL))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        guard bound == 0 else {
            let error = errno
            close(socket)
            errno = error
            return -1
        }
        return socket
    }
}

/// Where a packet came among those a management socket read (events and replies alike): an
/// event numbered below a reply was read before it, so the kernel sent it before it answered.
public struct PacketNumber: Comparable, Hashable, Sendable, CustomStringConvertible {
    let value: UInt64

    public init(_ value: UInt64) { self.value = value }

    public var next: PacketNumber { PacketNumber(value + 1) }
    public static func < (lhs: PacketNumber, rhs: PacketNumber) -> Bool { lhs.value < rhs.value }
    public var description: String { "packet \(value)" }
}

/// The management events the agent acts on (doc/mgmt-api.txt).
public enum ManagementEvent: Equatable, Sendable {
    /// New Settings (0x0006): the controller's current settings.
    case newSettings(controller: UInt16, ReadControllerInformation.Settings)
    /// Device Found (0x0012), or Advertisement Monitor Device Found (0x002F), which the kernel
    /// sends instead while it scans for monitors and no discovery runs.
    case deviceFound(controller: UInt16, DeviceFound)
    /// Advertisement Monitor Removed (0x002C): by another program than the one that hears it;
    /// handle 0 when it removed every monitor (bluetoothd's start).
    case monitorRemoved(controller: UInt16, handle: UInt16)
    /// Advertising Added (0x0023): an instance added by another socket than the one that hears it.
    case advertisingAdded(controller: UInt16, instance: UInt8)
    /// Advertising Removed (0x0024): an instance removed by another socket (bluetoothd's start
    /// removes every one), or by the kernel itself (the controller ended the set, power-off).
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
    /// The RSSIs of the same advertisement's receptions read while this one waited for the
    /// watch, in the order read (`ManagementSocket.WaitingReport`).
    public var laterRSSIs = [Int8]()

    /// The RSSI of each reception this reports, in the order read.
    public var rssis: [Int8] { [rssi] + laterRSSIs }
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

    /// Of a Device Found or Advertisement Monitor Device Found event, without decoding it: its
    /// controller, its RSSI, and the advertisement it reports (the packet with its RSSI as 0,
    /// the same for each reception of the same data from the same address); nil for any other
    /// packet, or one too short to hold an RSSI.
    static func report(_ packet: [UInt8]) -> (controller: UInt16, rssi: Int8, advertisement: [UInt8])? {
        guard packet.count >= 6 else { return nil }
        let code = UInt16(littleEndian: packet, at: 0)
        guard code == deviceFoundEvent || code == monitorDeviceFoundEvent else { return nil }
        // After the header (6 bytes), the monitor's handle (Monitor Device Found), the address and its type.
        let rssiAt = 6 + (code == monitorDeviceFoundEvent ? 2 : 0) + 7
        guard packet.count > rssiAt else { return nil }
        var advertisement = packet
        advertisement[rssiAt] = 0
        return (UInt16(littleEndian: packet, at: 2), Int8(bitPattern: packet[rssiAt]), advertisement)
    }

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
