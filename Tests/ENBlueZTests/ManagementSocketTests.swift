import Dispatch
@testable import ENBlueZ
import Glibc
import Synchronization
import Testing

/// The one management socket's routing, against a fake kernel at the other end of a socket pair
/// (SOCK_SEQPACKET keeps packets apart, as the kernel's control channel does). The kernel's side
/// runs on a queue of its own, so on a thread of its own: the global queue's few threads may all
/// be waiting in other tests.
@Suite struct ManagementSocketTests {
    /// The kernel's side: every socket the management socket opens is one end of a new pair, whose
    /// other end (a "peer", by opening) the test reads commands from and writes packets to.
    final class FakeKernel: Sendable {
        private let peers = Mutex([Int32]())
        /// The management socket's ends, by opening.
        private let opened = Mutex([Int32]())
        /// Openings still to fail (as socket(2) without AF_BLUETOOTH).
        private let failingOpenings = Mutex(0)

        func failOpenings(_ count: Int) { failingOpenings.withLock { $0 = count } }

        func open() -> Int32 {
            if failingOpenings.withLock({ count in defer { count = max(0, count - 1) }; return count > 0 }) {
                errno = EAFNOSUPPORT
                return -1
            }
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return -1 }
            peers.withLock { $0.append(ends[1]) }
            opened.withLock { $0.append(ends[0]) }
            return ends[0]
        }

        /// The management socket's end of the `opening`-th pair.
        func end(_ opening: Int) -> Int32? { opened.withLock { $0.count >= opening ? $0[opening - 1] : nil } }

        var openings: Int { peers.withLock { $0.count } }

        /// The peer of the `opening`-th socket (from 1), once it is opened (within 2 s).
        func peer(_ opening: Int) -> Int32? {
            for _ in 0..<200 {
                if let peer = peers.withLock({ $0.count >= opening ? $0[opening - 1] : nil }) { return peer }
                usleep(10_000)
            }
            return nil
        }

        /// The next command sent on the `opening`-th socket (within 2 s).
        func command(on opening: Int) -> [UInt8]? {
            guard let peer = peer(opening) else { return nil }
            var poller = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 2_000) == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 1_024)
            let count = read(peer, &buffer, buffer.count)
            return count > 0 ? Array(buffer[..<count]) : nil
        }

        /// Writes `packet` to the `opening`-th socket, waiting up to a second for room, as long as a
        /// reader could take to drain it; false when it stayed full (the kernel would drop it).
        @discardableResult
        func write(_ packet: [UInt8], on opening: Int) -> Bool {
            guard let peer = peer(opening) else { return false }
            while true {
                if send(peer, packet, packet.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) == packet.count { return true }
                guard errno == EAGAIN || errno == EWOULDBLOCK else { return false }
                var poller = pollfd(fd: peer, events: Int16(POLLOUT), revents: 0)
                guard poll(&poller, 1, 1_000) == 1 else { return false }
            }
        }

        /// Closes the `opening`-th socket's peer: the management socket reads its end.
        func hangUp(_ opening: Int) {
            guard let peer = peer(opening) else { return }
            peers.withLock { $0[opening - 1] = -1 }
            close(peer)
        }

        deinit { peers.withLock { $0.filter { $0 >= 0 }.forEach { close($0) } } }
    }

    /// Command Complete for `opcode` on `controller`.
    static func reply(to opcode: UInt16, controller: UInt16 = 0, status: UInt8 = 0, _ parameters: [UInt8] = []) -> [UInt8] {
        [0x01, 0x00] + controller.bytes + UInt16(3 + parameters.count).bytes + opcode.bytes + [status] + parameters
    }

    static func event(_ code: UInt16, controller: UInt16 = 0, _ parameters: [UInt8]) -> [UInt8] {
        code.bytes + controller.bytes + UInt16(parameters.count).bytes + parameters
    }

    /// Read Advertising Features' reply listing `instances` (extended advertising, 3 sets).
    static func features(_ instances: [UInt8]) -> [UInt8] {
        [0x80, 0, 0, 0, 31, 31, 3, UInt8(instances.count)] + instances
    }

    /// Device Found of the `number`-th device (its address's first two bytes), with three bytes of AD.
    static func deviceFound(_ number: UInt16, controller: UInt16 = 0, rssi: Int8 = -60) -> [UInt8] {
        event(0x0012, controller: controller, number.bytes + [0, 0, 0, 0xC0, 0x01, UInt8(bitPattern: rssi), 0, 0, 0, 0, 3, 0, 0x02, 0x01, 0x06])
    }

    /// A socket on a fake kernel, and its watch collecting what it hears on a queue of its own.
    static func watched() throws -> (FakeKernel, ManagementSocket, DispatchQueue, Heard, ManagementSocket.Watch) {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        let (queue, heard) = (DispatchQueue(label: "test.events"), Heard())
        return (kernel, socket, queue, heard, try socket.watchEvents(on: queue, heard.take))
    }

    /// Collects the events a watch hears; `wait` until `count` have come.
    final class Heard: Sendable {
        let events = Mutex([ManagementEvent]())
        /// The events' numbers in the order read.
        let numbers = Mutex([PacketNumber]())
        private let arrived = DispatchSemaphore(value: 0)

        func take(_ event: ManagementEvent, _ read: PacketNumber) {
            events.withLock { $0.append(event) }
            numbers.withLock { $0.append(read) }
            arrived.signal()
        }

        func wait(for count: Int) -> Bool {
            (0..<count).allSatisfy { _ in arrived.wait(timeout: .now() + 5) == .success }
        }
    }

    @Test func eventsBeforeTheReplyReachTheWatchInOrderAndTheCommandGetsItsOwnReply() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        let heard = Heard()
        let watch = try socket.watchEvents(on: DispatchQueue(label: "test.events"), heard.take)
        defer { watch.cancel() }
        let sent = Mutex<[UInt8]?>(nil)
        DispatchQueue(label: "test.kernel").async {
            sent.withLock { $0 = kernel.command(on: 1) }
            for packet in [Self.event(0x0023, [3]), Self.event(0x0006, [0x83, 0x02, 0, 0]), Self.deviceFound(7),
                           // Not this command's: another controller's, another opcode's.
                           Self.reply(to: ReadAdvertisingFeatures.opcode, controller: 1, Self.features([9])),
                           Self.reply(to: ReadControllerInformation.opcode, status: 0x0A),
                           Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([2]))] {
                kernel.write(packet, on: 1)
            }
        }
        let (features, replyRead) = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
        #expect(features.instances == [2])
        #expect(sent.withLock { $0 } == [0x3D, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(heard.wait(for: 3))
        let found = DeviceFound(address: [7, 0, 0, 0, 0, 0xC0], addressType: 1, rssi: -60, flags: 0, data: [0x02, 0x01, 0x06])
        #expect(heard.events.withLock { $0 } == [.advertisingAdded(controller: 0, instance: 3), .newSettings(controller: 0, [.powered, .connectable, .bredr, .le]),
                                                .deviceFound(controller: 0, found)])
        // Numbered as read: the three events, the two replies that are not this command's, then its own.
        #expect(heard.numbers.withLock { $0 } == [PacketNumber(1), PacketNumber(2), PacketNumber(3)] && replyRead == PacketNumber(6))
        #expect(kernel.openings == 1, "commands and events share the socket")
    }

    /// Asked for one controller's reports, the socket takes no other controller's (Device Found
    /// and Advertisement Monitor Device Found), and every other event of every controller: the
    /// kernel's socket filter drops them before they are read, as it does on the socketpair.
    @Test func anotherControllersReportsNeverReachTheSocket() throws {
        let (kernel, socket, _, heard, watch) = try Self.watched()
        defer { watch.cancel() }
        socket.passReports(only: 1)
        let settings = [UInt8]([0x83, 0x02, 0, 0])
        let monitorFound = { (controller: UInt16) in Self.event(0x002F, controller: controller, [1, 0] + Array(Self.deviceFound(5).dropFirst(6))) }
        for packet in [Self.deviceFound(1, controller: 0), monitorFound(0), Self.event(0x0006, controller: 0, settings),
                       Self.deviceFound(2, controller: 1), monitorFound(1), Self.event(0x0006, controller: 1, settings)] {
            #expect(kernel.write(packet, on: 1))
        }
        #expect(heard.wait(for: 4))
        let found = { (number: UInt8) in ManagementEvent.deviceFound(controller: 1, DeviceFound(address: [number, 0, 0, 0, 0, 0xC0], addressType: 1, rssi: -60,
                                                                                               flags: 0, data: [0x02, 0x01, 0x06])) }
        // The reports wait behind the other events of their batch, whose cut depends on the reader's pace.
        let split = { () -> (others: [ManagementEvent], reports: [ManagementEvent]) in
            let events = heard.events.withLock { $0 }
            let isReport = { (event: ManagementEvent) in if case .deviceFound = event { true } else { false } }
            return (events.filter { !isReport($0) }, events.filter(isReport))
        }
        #expect(split().others == [.newSettings(controller: 0, [.powered, .connectable, .bredr, .le]), .newSettings(controller: 1, [.powered, .connectable, .bredr, .le])])
        #expect(split().reports == [found(2), found(5)])
        // Read in order: a report of controller 0 that got through would have come before this one.
        #expect(kernel.write(Self.deviceFound(3, controller: 1), on: 1) && heard.wait(for: 1))
        #expect(split().reports == [found(2), found(5), found(3)])
    }

    /// The radio asks, on the watch's queue, for the events read before a reply, which would
    /// otherwise wait for its work to end: they are handed over in line, the reports only when
    /// asked for too, and after the rest; the second report of the advertisement joined the first,
    /// which still waited.
    @Test func theEventsReadBeforeAReplyAreHandedOverInLineWhenAsked() throws {
        let (kernel, socket, queue, heard, watch) = try Self.watched()
        defer { watch.cancel() }
        DispatchQueue(label: "test.kernel").async {
            for _ in 0..<2 {
                guard kernel.command(on: 1) != nil else { return }
                kernel.write(Self.deviceFound(1), on: 1)
                kernel.write(Self.event(0x0006, [0x83, 0x02, 0, 0]), on: 1)
                kernel.write(Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([2])), on: 1)
            }
        }
        let settings = ManagementEvent.newSettings(controller: 0, [.powered, .connectable, .bredr, .le])
        let found = DeviceFound(address: [1, 0, 0, 0, 0, 0xC0], addressType: 1, rssi: -60, flags: 0, data: [0x02, 0x01, 0x06])
        let heardInLine = try queue.sync {
            _ = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
            socket.deliverPending(withReports: false)
            let withoutReports = heard.events.withLock { $0 }
            _ = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
            socket.deliverPending(withReports: true)
            return (withoutReports, heard.events.withLock { $0 })
        }
        #expect(heardInLine.0 == [settings])
        var twice = found
        twice.laterRSSIs = [-60]
        #expect(heardInLine.1 == [settings, settings, .deviceFound(controller: 0, twice)])
    }

    @Test func aReplyAfterItsCommandTimedOutAnswersNoLaterCommand() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket(replyTimeout: .milliseconds(500)) { kernel.open() }
        let heard = Heard()
        let watch = try socket.watchEvents(on: DispatchQueue(label: "test.events"), heard.take)
        defer { watch.cancel() }
        DispatchQueue(label: "test.kernel").async { _ = kernel.command(on: 1) }
        #expect(throws: ManagementError.noReply(ReadAdvertisingFeatures.name, controller: 0)) {
            try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
        }
        // The reply comes late, on the socket the command went out on.
        kernel.write(Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([1])), on: 1)
        #expect(kernel.openings == 2, "a new socket at once, for the watch")
        kernel.write(Self.event(0x0024, [1]), on: 2)
        #expect(heard.wait(for: 1))
        #expect(heard.events.withLock { $0 } == [.advertisingRemoved(controller: 0, instance: 1)])

        DispatchQueue(label: "test.kernel").async {
            guard kernel.command(on: 2) != nil else { return }
            kernel.write(Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([2])), on: 2)
        }
        #expect(try socket.exchange(ReadAdvertisingFeatures(), controller: 0).reply.instances == [2])
    }

    @Test func thousandsOfDevicesFoundWhileNoCommandRunsLeaveRoomForTheNextReply() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        let heard = Heard()
        let watch = try socket.watchEvents(on: DispatchQueue(label: "test.events"), heard.take)
        defer { watch.cancel() }
        // More than a socket holds unread (the kernel drops what does not fit; the pair's sender waits).
        let devices = 5_000
        let written = (0..<devices).filter { kernel.write(Self.deviceFound(UInt16($0)), on: 1) }.count
        #expect(written == devices)
        // Each handed over, or dropped if the watch's queue fell `waitingReportsAtMost` behind.
        var dropped = 0
        for _ in 0..<500 where heard.events.withLock(\.count) + dropped < devices {
            dropped += socket.takeDroppedReports(controller: 0)
            usleep(10_000)
        }
        #expect(heard.events.withLock(\.count) + dropped == devices)
        DispatchQueue(label: "test.kernel").async {
            guard kernel.command(on: 1) != nil else { return }
            kernel.write(Self.reply(to: ReadControllerInformation.opcode, [UInt8](repeating: 0, count: 13) + [0x01, 0x02, 0, 0]), on: 1)
        }
        #expect(try socket.exchange(ReadControllerInformation(), controller: 0).reply.current == [.powered, .le])
    }

    /// A crowd's reports faster than the watch's queue takes them: at most `waitingReportsAtMost`
    /// of a controller wait, its Device Found events beyond are dropped and counted, another
    /// controller's still come, in order, any other event before them all (the radio hears an
    /// adapter turned connectable at once, not seconds later), and the queue's other work takes
    /// its turn after every `deliveredPerTurn` events, not behind them all.
    @Test func reportsBeyondWhatWaitsAreDroppedAndCountedAndTheQueueTakesTurns() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        let queue = DispatchQueue(label: "test.events")
        let heard = Heard()
        let otherWorkAfter = Mutex<Int?>(nil)
        let watch = try socket.watchEvents(on: queue) { event, read in
            if heard.events.withLock({ $0.isEmpty }) {
                queue.async { otherWorkAfter.withLock { $0 = heard.events.withLock(\.count) } }
            }
            heard.take(event, read)
        }
        defer { watch.cancel() }
        queue.suspend()
        let beyond = 1_000, waiting = ManagementSocket.waitingReportsAtMost
        let written = (0..<(waiting + beyond)).filter { kernel.write(Self.deviceFound(UInt16($0)), on: 1) }.count
        let others = 10
        #expect(written == waiting + beyond && (0..<others).allSatisfy { kernel.write(Self.deviceFound(UInt16($0), controller: 1), on: 1) })
        #expect(kernel.write(Self.event(0x0006, [0x83, 0x02, 0, 0]), on: 1))
        var dropped = 0
        for _ in 0..<500 where dropped < beyond {
            dropped += socket.takeDroppedReports(controller: 0)
            usleep(10_000)
        }
        #expect(dropped == beyond && socket.takeDroppedReports(controller: 1) == 0)
        queue.resume()
        #expect(heard.wait(for: waiting + others + 1))
        #expect(otherWorkAfter.withLock { $0 } == ManagementSocket.deliveredPerTurn)
        #expect(heard.events.withLock { $0.first } == .newSettings(controller: 0, [.powered, .connectable, .bredr, .le]))
    }

    /// A crowd's phones are each heard many times a scan: a report of an advertisement that waits
    /// joins it, its RSSI after the others, so that what waits is bounded by the advertisers, not
    /// their receptions; nothing is dropped of more receptions than `waitingReportsAtMost`. One
    /// report takes `receptionsPerReportAtMost`, and a reception read after its report was handed
    /// over begins another; another address, controller or data is another advertisement.
    @Test func receptionsOfAnAdvertisementWaitingJoinItsReport() throws {
        let (kernel, socket, queue, heard, watch) = try Self.watched()
        defer { watch.cancel() }
        queue.suspend()
        let phones = 300, receptions = 20
        #expect(ManagementSocket.waitingReportsAtMost < phones * receptions)
        var otherData = Self.deviceFound(0)
        otherData[otherData.count - 1] = 0x1A
        let cap = ManagementSocket.receptionsPerReportAtMost
        let crowd = (0..<receptions).flatMap { reception in (0..<phones).map { Self.deviceFound(UInt16($0), rssi: Int8(-reception)) } }
        let others = [Self.deviceFound(0, controller: 1), otherData] + Array(repeating: Self.deviceFound(9_999), count: cap + 1)
        // A command's reply after them all: once it is in, every one of them has been read.
        DispatchQueue(label: "test.kernel").async {
            guard kernel.command(on: 1) != nil else { return }
            for packet in crowd + others { kernel.write(packet, on: 1) }
            kernel.write(Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([1])), on: 1)
        }
        _ = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
        queue.resume()
        #expect(heard.wait(for: phones + 4))
        let reports = heard.events.withLock { $0 }.compactMap { event -> (UInt16, DeviceFound)? in
            guard case .deviceFound(let controller, let found) = event else { return nil }
            return (controller, found)
        }
        #expect(socket.takeDroppedReports(controller: 0) == 0)
        #expect(reports.count == phones + 4)
        let heardCrowd = reports.prefix(phones)
        #expect(heardCrowd.map { UInt16($0.1.address[0]) | UInt16($0.1.address[1]) << 8 } == (0..<phones).map(UInt16.init))
        #expect(heardCrowd.allSatisfy { $0.1.rssis == (0..<receptions).map { Int8(-$0) } })
        #expect(reports.dropFirst(phones).map { [$0.0: $0.1.rssis.count] } == [[1: 1], [0: 1], [0: cap], [0: 1]])
        #expect(reports[phones + 1].1.data.last == 0x1A)

        // Handed over: the advertisement's next reception is a report of its own.
        #expect(kernel.write(Self.deviceFound(0, rssi: -90), on: 1))
        #expect(heard.wait(for: 1))
        #expect(heard.events.withLock { $0.last } == .deviceFound(controller: 0, DeviceFound(address: [0, 0, 0, 0, 0, 0xC0], addressType: 1, rssi: -90,
                                                                                          flags: 0, data: [0x02, 0x01, 0x06])))
    }

    /// The radio empties the waiting events whenever it asks for them (`deliverPending`: every
    /// 50 ms while bluetoothd is asked), and new ones come at once in a crowd: still only one turn
    /// of the watch waits on its queue, so the queue's other work waits `deliveredPerTurn` events
    /// at most. A turn queued for each emptying lived on while events kept coming, and a timer
    /// waited behind all their batches (the RootCanal crowd of 2026-11-30 18:20: a scan of 3 s
    /// ran 60 s).
    @Test func emptyingTheWaitingEventsOftenLeavesOneTurnOnTheQueue() throws {
        let (kernel, socket, queue, heard, watch) = try Self.watched()
        defer { watch.cancel() }
        let emptyings = 20, crowd = 3_000
        // Each command's reply comes after a report (the last one's after the crowd's), so that
        // the reports are read once the reply is in.
        DispatchQueue(label: "test.kernel").async {
            for emptying in 0...emptyings {
                guard kernel.command(on: 1) != nil else { return }
                for device in 0..<(emptying < emptyings ? 1 : crowd) { kernel.write(Self.deviceFound(UInt16(device)), on: 1) }
                kernel.write(Self.reply(to: ReadAdvertisingFeatures.opcode, Self.features([1])), on: 1)
            }
        }
        let otherWorkAfter = Mutex<Int?>(nil)
        try queue.sync {
            for _ in 0..<emptyings {
                _ = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
                socket.deliverPending(withReports: true)
            }
            _ = try socket.exchange(ReadAdvertisingFeatures(), controller: 0)
            queue.async { otherWorkAfter.withLock { $0 = heard.events.withLock(\.count) - emptyings } }
        }
        #expect(heard.wait(for: emptyings + crowd))
        #expect(otherWorkAfter.withLock { $0 } == ManagementSocket.deliveredPerTurn)
    }

    /// The kernel drops what a full socket cannot take, a command's reply too (which fails the
    /// command with ENOMEM): the socket asks for room for a second or more of a crowd's events.
    @Test func theSocketAsksForRoomForACrowdsEvents() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        let watch = try socket.watchEvents(on: DispatchQueue(label: "test.events")) { _, _ in }
        defer { watch.cancel() }
        let end = try #require(kernel.end(1))
        var bytes: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(end, SOL_SOCKET, SO_RCVBUF, &bytes, &size) == 0)
        // Without CAP_NET_ADMIN the kernel caps the request at net.core.rmem_max (and doubles what it grants).
        let capped = geteuid() == 0 ? ManagementSocket.receiveBufferBytes : min(ManagementSocket.receiveBufferBytes, Self.receiveBufferLimit())
        #expect(bytes >= capped, "the receive buffer is \(bytes) bytes")
    }

    /// net.core.rmem_max.
    static func receiveBufferLimit() -> Int32 {
        let file = open("/proc/sys/net/core/rmem_max", O_RDONLY)
        defer { close(file) }
        var text = [UInt8](repeating: 0, count: 32)
        let count = read(file, &text, text.count)
        return Int32(String(decoding: text[..<max(0, count)], as: UTF8.self).filter(\.isNumber)) ?? 0
    }

    @Test func aSocketThatWouldNotOpenOrFailedIsOpenedAnewForTheNextCommand() throws {
        let kernel = FakeKernel()
        let socket = ManagementSocket { kernel.open() }
        kernel.failOpenings(2)
        #expect(throws: ManagementError.unreachable(ReadControllerInformation.name, EAFNOSUPPORT)) {
            try socket.exchange(ReadControllerInformation(), controller: 0)
        }
        #expect(throws: ManagementError.unreachable("watching the adapters' events", EAFNOSUPPORT)) {
            try socket.watchEvents(on: DispatchQueue(label: "test.events")) { _, _ in }
        }

        // The socket ends while a command waits: it hears so at once, not at the timeout.
        DispatchQueue(label: "test.kernel").async {
            guard kernel.command(on: 1) != nil else { return }
            kernel.hangUp(1)
        }
        let start = ContinuousClock.now
        #expect(throws: ManagementError.unreachable(RemoveAdvertising.name, EPIPE)) {
            try socket.exchange(RemoveAdvertising(instance: 1), controller: 0)
        }
        #expect(ContinuousClock.now - start < .milliseconds(ManagementSocket.replyTimeoutMilliseconds))

        DispatchQueue(label: "test.kernel").async {
            guard kernel.command(on: 2) != nil else { return }
            kernel.write(Self.reply(to: RemoveAdvertising.opcode, [1]), on: 2)
        }
        _ = try socket.exchange(RemoveAdvertising(instance: 1), controller: 0)
        #expect(kernel.openings == 2)
    }
}

extension UInt16 {
    fileprivate var bytes: [UInt8] { [UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8)] }
}
