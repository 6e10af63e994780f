import Dispatch
@testable import ENBlueZ
import Glibc
import Synchronization

/// The kernel's Bluetooth management interface for one controller (hci0), as far as the radio
/// depends on it, from net/bluetooth/mgmt.c and hci_sync.c and what the lab measured (docs/radio.md:
/// "A second advertiser", "Suspend, unplug, airplane mode"; docs/lab.md). Commands are answered at
/// once; events and replies are numbered in the order the radio's socket reads them, and events
/// wait until the radio asks for those read so far (`deliverPending`, on its queue, in the middle
/// of a call) or until `deliver` (its queue between two calls). The radio sends its commands on
/// the socket its watch reads, and the kernel tells every socket but a command's sender of what the
/// command did (mgmt.c: `mgmt_event`'s skip_sk), so the queue holds what other programs and the
/// kernel itself did, never what the radio's commands did, but for Discovering (`mgmt_discovering`
/// tells every socket).
final class KernelModel: ManagementInterface {
    /// Where Debian 12's kernel and trixie's differ in what the agent depends on.
    struct Kernel: Sendable, CustomStringConvertible {
        var name: String
        /// After rfkill closed a BT 5 controller, the kernel keeps the instances the controller
        /// lost and fails (status Failed) commands that touch them (6.1, measured in the lab).
        var rfkillLeavesStuckInstances: Bool
        /// An advertisement monitor sent to a controller that is down is failed (Failed) and stays
        /// pending: every later monitor, and every removal, is Busy until the adapter next goes
        /// off (6.12.117, measured in the lab: __add_adv_patterns_monitor leaves the command it
        /// added when hci_cmd_sync_queue refuses it; __mgmt_power_off answers every pending one).
        /// 6.1 too: make test's Debian 12 lab of 2026-11-29 stranded a stalled discovery's monitor
        /// in its airplane mode (status 0x03, then Busy 45 times).
        var strandsFailedMonitor: Bool

        static let bookworm = Kernel(name: "6.1", rfkillLeavesStuckInstances: true, strandsFailedMonitor: true)
        /// 6.12 clears instances at rfkill as at power-off (issue 39's lab to confirm it).
        static let trixie = Kernel(name: "6.12", rfkillLeavesStuckInstances: false, strandsFailedMonitor: true)

        var description: String { name }
    }

    enum Owner: Equatable { case radio, other }

    struct Instance {
        var owner: Owner
        /// Nil until its data is added (parameters only: held, nothing on the air).
        var data: [UInt8]?
        /// The controller lost its set (rfkill on 6.1): commands touching it fail, nothing on the air.
        var stuck = false
        /// Seconds of each turn on a legacy controller's set: the parameters' duration, else the
        /// kernel's default (hci_add_adv_instance).
        var turnSeconds = KernelModel.defaultTurnSeconds
    }

    /// The kernel's turn on a legacy set when the instance names none (HCI_DEFAULT_ADV_DURATION).
    static let defaultTurnSeconds = 2.0

    /// One advertisement that went on the air: its data, from which address.
    struct Aired: Equatable {
        var data: [UInt8]
        var address: Int
        /// Sent as connectable ADV_IND from the adapter's own address.
        var fromPublicAddress: Bool
        /// Written to a legacy set while another program's instance had it, from that instance's
        /// address: the kernel lending the one set to another program that added its instance
        /// between two of the radio's commands, which the radio hears of only afterwards.
        var inAnotherProgramsTurn = false
    }

    struct State {
        var present = true
        var powered = true
        var blocked = false
        /// Times the radio switched the controller on itself (Set Powered).
        var poweredByRadio = 0
        var connectable = false
        var instances = [UInt8: Instance]()
        /// What is on the air now, by instance.
        var onAir = [UInt8: Aired]()
        /// On a legacy controller, the instance whose turn it is on the one set.
        var turn: UInt8?
        var nextAddress = 1
        /// Every advertisement that went on the air, in order.
        var history = [Aired]()
        /// A discovery runs (anyone's, or one a bluetoothd that died left): a legacy controller
        /// refuses a new random address meanwhile.
        var scanning = false
        /// The advertisements the running discovery reported: the controller reports each
        /// advertiser once per scan it enables (the discovery's duplicate filter). The model's
        /// phones share an address, so an advertisement's data stands for its advertiser.
        var reportedInDiscovery = Set<[UInt8]>()
        /// Advertisement monitors: while any is registered and the adapter is on, the kernel scans
        /// passively for them, and a legacy controller refuses a new random address as it does
        /// during a discovery. They stay across a power cycle (the kernel keeps them).
        var monitors = Set<UInt16>()
        var scansPassively: Bool { powered && !monitors.isEmpty }
        /// A failed monitor the kernel keeps pending (`Kernel.strandsFailedMonitor`).
        var strandedMonitor = false
        /// The kernel makes an LE connection (bluetoothd reconnecting a paired device): a controller
        /// that is initiating refuses a new random address. Power-off ends it.
        var connecting = false
        /// A legacy controller's random address in force (the last advertisement's), cleared at
        /// power-off (hci_dev_close_sync). While a connection is being initiated the kernel keeps it
        /// for the next advertisement instead of setting a new one (hci_set_random_addr_sync), and
        /// with none in force the controller refuses the new one, and the advertisement fails.
        var legacyAddress: Int?
        /// Events not handed to the radio yet, each numbered as read.
        var events = [(ManagementEvent, PacketNumber)]()
        /// The controller whose reports the radio's socket takes (`passReports`): the kernel drops
        /// every other's, as the socket's filter has it; every controller's until asked.
        var reportsPassed: UInt16?
        /// Discovering events held back (`holdDiscoveringEvents`), to be read later.
        var heldDiscovering: [ManagementEvent]?
        /// The kernel lists `another` controller too (an LE one, as it answers for it as for this one).
        var anotherListed = false
        /// The packets read: events and replies.
        var read = PacketNumber(0)
        var watch: (queue: DispatchQueue, handler: @Sendable (ManagementEvent, PacketNumber) -> Void)?
        /// Commands the radio sent, with the status each got (0: success).
        var commands = [(name: String, instance: UInt8?, status: UInt8)]()
        var seconds = 0.0
        var lastTurn = 0.0
        /// Something that happens just before the radio's command numbered `at` reaches the kernel.
        var pending: (at: Int, happen: @Sendable () -> Void)?
        /// Questions for the advertising channel's TX power (`channelTransmitPower`): those asked,
        /// and how many more go unanswered (a busy controller: libbluetooth's hci_send_req times out).
        var channelPowerAsked = 0
        var channelPowerUnanswered = 0
    }

    /// The advertising channel TX power a controller tells over a raw HCI socket (HCI LE Read
    /// Advertising Physical Channel Tx Power).
    static let channelTransmitPower: Int8 = -10
    /// The TX power a BT 5 controller selects for an advertising set (Set Extended Advertising
    /// Parameters); a legacy controller selects none, and the kernel answers 127 (its
    /// HCI_TX_POWER_INVALID, which only the extended command's reply replaces: hci_cc_le_set_ext_adv_param).
    static let selectedTransmitPower: Int8 = 7

    /// Asks the controller for its advertising channel's TX power.
    func readChannelTransmitPower() throws -> Int8 {
        try state.withLock { state in
            state.channelPowerAsked += 1
            guard state.channelPowerUnanswered == 0 else {
                state.channelPowerUnanswered -= 1
                throw ControllerTransmitPower.Failure.unreachable("hci0", ETIMEDOUT)
            }
            return Self.channelTransmitPower
        }
    }

    /// The next `count` questions for the channel's TX power go unanswered.
    func leaveChannelPowerUnanswered(_ count: Int) { state.withLock { $0.channelPowerUnanswered = count } }

    let kernel: Kernel
    let legacy: Bool
    /// Advertising sets: a BT 5 controller's own (btvirt: 3); a legacy controller's instances share one.
    let maximumInstances: UInt8
    let state = Mutex(State())

    init(kernel: Kernel, legacy: Bool) {
        self.kernel = kernel
        self.legacy = legacy
        self.maximumInstances = legacy ? 5 : 3
    }

    static let controller: UInt16 = 0
    /// hci0's address (BluetoothdModel's Address), most significant byte first.
    static let address: [UInt8] = [0x00, 0x1A, 0x7D, 0xDA, 0x71, 0x13]

    // MARK: ManagementInterface

    func exchange<Command: ManagementCommand>(_ command: Command, controller: UInt16) throws(ManagementError) -> (reply: Command.Reply, read: PacketNumber) {
        if let happen = state.withLock({ state -> (@Sendable () -> Void)? in
            guard let pending = state.pending, pending.at <= state.commands.count else { return nil }
            state.pending = nil
            return pending.happen
        }) {
            happen()
        }
        let instance = (command as? RemoveAdvertising)?.instance ?? (command as? AddExtendedAdvertisingParameters)?.instance
            ?? (command as? AddExtendedAdvertisingData)?.instance ?? (command as? AddAdvertising)?.instance
        let outcome: Result<[UInt8], ManagementError> = state.withLock { state in
            do throws(ManagementError) { return .success(try answer(command, state: &state)) } catch { return .failure(error) }
        }
        let read = state.withLock { state in
            state.commands.append((Command.name, instance, outcome.status))
            state.read = state.read.next
            return state.read
        }
        if command is StopDiscovery, case .success = outcome { discoveryStopped.withLock { $0 }?() }
        return (try Command.decode(outcome.get()), read)
    }

    /// Who hears that the radio stopped a discovery through the kernel (bluetoothd reads the
    /// kernel's Discovering event on its own socket).
    private let discoveryStopped = Mutex<(@Sendable () -> Void)?>(nil)
    func whenTheRadioStopsADiscovery(_ heard: @escaping @Sendable () -> Void) { discoveryStopped.withLock { $0 = heard } }

    func watchEvents(on queue: DispatchQueue, _ handler: @escaping @Sendable (ManagementEvent, PacketNumber) -> Void) throws(ManagementError) -> any ManagementWatch {
        state.withLock { $0.watch = (queue, handler) }
        return Watch(model: self)
    }

    final class Watch: ManagementWatch {
        let model: KernelModel
        init(model: KernelModel) { self.model = model }
        func cancel() { model.state.withLock { $0.watch = nil } }
    }

    /// Hands every event read so far to the radio's watch, in line, on the watch's queue, as the
    /// management socket does: the Device Found events after the rest, and only `withReports`.
    func deliverPending(withReports: Bool) {
        while let (event, read, handler) = state.withLock({ state -> (ManagementEvent, PacketNumber, @Sendable (ManagementEvent, PacketNumber) -> Void)? in
            guard let watch = state.watch else { return nil }
            let isReport = { (waiting: (ManagementEvent, PacketNumber)) in if case .deviceFound = waiting.0 { true } else { false } }
            guard let index = state.events.firstIndex(where: { !isReport($0) }) ?? (withReports ? state.events.indices.first : nil) else { return nil }
            dispatchPrecondition(condition: .onQueue(watch.queue))
            let (event, read) = state.events.remove(at: index)
            return (event, read, watch.handler)
        }) {
            handler(event, read)
        }
    }

    /// The model hands the radio every event: none dropped.
    func takeDroppedReports(controller: UInt16) -> Int { 0 }

    func passReports(only controller: UInt16) { state.withLock { $0.reportsPassed = controller } }

    /// Hands every queued event to the radio's watch on its queue, between the radio's calls.
    func deliver() {
        guard let queue = state.withLock({ $0.watch?.queue }) else { return }
        queue.sync { deliverPending(withReports: true) }
    }

    // MARK: The commands

    private static let failed: UInt8 = 0x03, busy: UInt8 = 0x0A, rejected: UInt8 = 0x0B, notSupported: UInt8 = 0x0C,
                       invalidParameters: UInt8 = 0x0D, notPowered: UInt8 = 0x0F, invalidIndex: UInt8 = 0x11, rfkilled: UInt8 = 0x12

    private func answer<Command: ManagementCommand>(_ command: Command, state: inout State) throws(ManagementError) -> [UInt8] {
        func refuse(_ status: UInt8) -> ManagementError { .refused(Command.name, controller: Self.controller, status: status) }
        if command is ReadControllerIndexList {
            let listed = (state.present ? [Self.controller] : []) + (state.anotherListed ? [Self.another] : [])
            return UInt16(listed.count).littleEndianBytes + listed.flatMap(\.littleEndianBytes)
        }
        guard state.present else { throw refuse(Self.invalidIndex) }
        switch command {
        case is ReadControllerInformation:
            let supported: ReadControllerInformation.Settings = [.powered, .connectable, .bredr, .le, .advertising]
            return Self.address.reversed() + [0, 0, 0] + supported.rawValue.littleEndianBytes + state.settings.rawValue.littleEndianBytes
        case let set as SetPowered:
            // New Settings goes to every socket but the sender's (set_powered's new_settings).
            if set.on && !state.powered {
                guard !state.blocked else { throw refuse(Self.rfkilled) }
                switchOn(state: &state)
                state.poweredByRadio += 1
            }
            return state.settings.rawValue.littleEndianBytes
        case is ReadAdvertisingFeatures:
            // Only instances numbered up to their count are listed: measured on 6.1 (a beacon alone
            // in instance 3 is not listed) and on 6.12 with a legacy controller (the trixie-bt4 lab
            // of 2026-11-30 read "Instances: 0" beside the agent's instance 5 alone on the air).
            let count = UInt8(state.instances.count)
            let listed = state.instances.keys.sorted().filter { $0 <= count }
            let flags: UInt32 = legacy ? 0 : 1 << 7
            return flags.littleEndianBytes + [31, 31, maximumInstances, UInt8(listed.count)] + listed
        case let add as AddExtendedAdvertisingParameters:
            guard state.powered else { throw refuse(Self.notPowered) }
            guard (1...maximumInstances).contains(add.instance) else { throw refuse(Self.invalidParameters) }
            if let existing = state.instances[add.instance] {
                guard !existing.stuck else { throw refuse(Self.failed) }
                // New parameters for an instance on the air: the kernel re-programs it, same address.
                state.instances[add.instance]?.owner = .radio
            } else {
                guard legacy || state.instances.count < Int(maximumInstances) else { throw refuse(ManagementError.noResources) }
                state.instances[add.instance] = Instance(owner: .radio)
            }
            state.instances[add.instance]?.turnSeconds = add.flags.contains(.useDuration) && add.durationSeconds > 0 ? Double(add.durationSeconds) : Self.defaultTurnSeconds
            return [add.instance, UInt8(bitPattern: legacy ? 127 : Self.selectedTransmitPower), 31, 31]
        case let add as AddExtendedAdvertisingData:
            guard state.powered else { throw refuse(Self.notPowered) }
            guard let existing = state.instances[add.instance] else { throw refuse(Self.invalidParameters) }
            guard !existing.stuck else { throw refuse(Self.failed) }
            // A legacy controller takes the new instance's address only while no scan runs; the
            // kernel removes an instance whose enabling failed (add_adv_complete).
            if legacy && (state.scanning || state.scansPassively || state.connecting && state.legacyAddress == nil) {
                removeInstance(add.instance, by: .radio, state: &state)
                throw refuse(Self.failed)
            }
            state.instances[add.instance]?.data = add.advertisingData
            enable(add.instance, state: &state)
            // Advertising Added goes to every socket but the radio's (add_ext_adv_data).
            return [add.instance]
        case let add as AddAdvertising:
            guard (1...maximumInstances).contains(add.instance) else { throw refuse(Self.invalidParameters) }
            guard state.powered || add.timeoutSeconds == 0 else { throw refuse(Self.rejected) }
            state.instances[add.instance] = Instance(owner: .radio, data: add.advertisingData)
            if state.powered { enable(add.instance, state: &state) }
            // Advertising Added goes to every socket but the radio's (add_advertising).
            return [add.instance]
        case let remove as RemoveAdvertising:
            // The kernel queues nothing for a controller that is down (the socket's write fails).
            guard state.powered else { throw .unreachable(Command.name, ENETDOWN) }
            guard let existing = state.instances[remove.instance] else { throw refuse(Self.invalidParameters) }
            guard !existing.stuck else { throw refuse(Self.failed) }
            removeInstance(remove.instance, by: .radio, state: &state)
            return [remove.instance]
        case let stop as StopDiscovery:
            guard state.scanning else { throw refuse(Self.rejected) }
            guard stop.addressTypes == leAddressTypes else { throw refuse(Self.invalidParameters) }
            setScanning(false, state: &state)
            return [leAddressTypes]
        case is ReadAdvertisementMonitorFeatures:
            let handles = state.monitors.sorted()
            return [UInt8](repeating: 0, count: 11) + UInt16(handles.count).littleEndianBytes + handles.flatMap(\.littleEndianBytes)
        case is AddAdvertisementPatternsMonitor:
            guard !state.strandedMonitor else { throw refuse(Self.busy) }
            guard state.powered else {
                guard kernel.strandsFailedMonitor else { throw refuse(Self.notPowered) }
                state.strandedMonitor = true
                throw refuse(Self.failed)
            }
            let handle = (1...UInt16.max).first { !state.monitors.contains($0) }!
            state.monitors.insert(handle)
            return handle.littleEndianBytes
        case let remove as RemoveAdvertisementMonitor:
            guard !state.strandedMonitor else { throw refuse(Self.busy) }
            guard state.monitors.remove(remove.handle) != nil else { throw refuse(Self.invalidParameters) }
            // Advertisement Monitor Removed goes to every socket but the radio's (mgmt_remove_adv_monitor_complete).
            return []
        default:
            throw refuse(0x01)
        }
    }

    /// Puts `instance` on the air: on a BT 5 controller its own set, from a new address; on a
    /// legacy one the set goes to it at once (the kernel schedules the newest), from a new address.
    private func enable(_ instance: UInt8, state: inout State) {
        guard let data = state.instances[instance]?.data else { return }
        // The kernel writes a legacy set's data before it disables the set for the new address
        // (hci_start_adv_sync: hci_update_adv_data_sync, then hci_enable_advertising_sync): the new
        // data goes out first from the address in force. Measured in the trixie-bt4 lab of
        // 2026-11-30: LE Set Advertising Data with a new RPI while enabled, then the new address.
        if legacy {
            if let (turn, current) = state.onAir.first, state.powered {
                state.history.append(Aired(data: data, address: current.address, fromPublicAddress: current.fromPublicAddress,
                                           inAnotherProgramsTurn: state.instances[turn]?.owner != state.instances[instance]?.owner))
            }
            state.onAir = [:]
            state.turn = instance
            state.lastTurn = state.seconds
        }
        let kept = legacy && state.connecting ? state.legacyAddress : nil
        let address = kept ?? state.nextAddress
        if kept == nil { state.nextAddress += 1 }
        if legacy { state.legacyAddress = address }
        state.onAir[instance] = Aired(data: data, address: address, fromPublicAddress: state.connectable && legacy)
        state.history.append(state.onAir[instance]!)
    }

    /// Removes `instance` for `remover`: the radio's watch hears of another program's removal only
    /// (hci_remove_adv_sync, hci_cc_le_remove_adv_set, add_adv_complete: every socket but the sender's).
    private func removeInstance(_ instance: UInt8, by remover: Owner, state: inout State) {
        state.instances[instance] = nil
        state.onAir[instance] = nil
        if remover != .radio { state.happened(.advertisingRemoved(controller: Self.controller, instance: instance)) }
        if legacy && state.turn == instance {
            state.turn = nil
            nextTurn(state: &state)
        }
    }

    /// A legacy controller's set goes to the next enabled instance, from a new address; refused
    /// (the turn skipped) while a scan runs.
    private func nextTurn(state: inout State) {
        let enabled = state.instances.filter { $0.value.data != nil && !$0.value.stuck }.keys.sorted()
        guard state.powered, !enabled.isEmpty else { state.onAir = [:]; state.turn = nil; return }
        let next = enabled.first { $0 > (state.turn ?? 0) } ?? enabled[0]
        state.lastTurn = state.seconds
        guard !state.scanning || enabled.count == 1 && state.turn == next else { return }
        if state.turn == next && !state.onAir.isEmpty { return }
        enable(next, state: &state)
    }

    // MARK: What happens to the controller

    /// `happen` runs just before the radio's `commands`-th command from now (as rfkill or
    /// bluetoothd's start cut into the radio's work); at once when none comes.
    func duringCommand(_ commands: Int, _ happen: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending = ($0.commands.count + commands, happen) }
    }

    /// Runs what was to happen during a command that never came.
    func runPending() {
        if let pending = state.withLock({ state in defer { state.pending = nil }; return state.pending }) { pending.happen() }
    }

    /// Time passes: a legacy controller's instances take turns, each as long as its duration (an
    /// instance added meanwhile waits for the turn's end: add_ext_adv_data, adv_timeout_expire).
    func advance(seconds: Double) {
        state.withLock { state in
            state.seconds += seconds
            let turnSeconds = state.turn.flatMap { state.instances[$0]?.turnSeconds } ?? Self.defaultTurnSeconds
            guard legacy, state.seconds - state.lastTurn >= turnSeconds else { return }
            let enabled = state.instances.filter { $0.value.data != nil && !$0.value.stuck }
            if enabled.count > 1 || state.onAir.isEmpty { nextTurn(state: &state) }
        }
    }

    /// rfkill marks the switch blocked; the kernel has yet to close the adapter, which still runs
    /// (net/rfkill/core.c rfkill_set_block sets the state before hci_rfkill_set_block closes it):
    /// `powerOff(rfkill: true)` ends it.
    func rfkillMarksBlocked() { state.withLock { $0.blocked = true } }

    /// Power off (bluetoothd or rfkill): the kernel keeps the instances, nothing on the air.
    func powerOff(rfkill: Bool = false) {
        state.withLock { state in
            if state.powered { state.strandedMonitor = false }
            state.powered = false
            state.blocked = state.blocked || rfkill
            state.onAir = [:]
            state.turn = nil
            setScanning(false, state: &state)
            state.connecting = false
            state.legacyAddress = nil
            if rfkill && kernel.rfkillLeavesStuckInstances && !legacy {
                for key in state.instances.keys { state.instances[key]?.stuck = true }
            }
            state.happened(.newSettings(controller: Self.controller, state.settings))
        }
    }

    /// Power on (bluetoothd): the kernel enables the instances it kept, each from a new address.
    func powerOn() {
        state.withLock { state in
            guard state.present, !state.blocked, !state.powered else { return }
            switchOn(state: &state)
            state.happened(.newSettings(controller: Self.controller, state.settings))
        }
    }

    private func switchOn(state: inout State) {
        state.powered = true
        for (number, instance) in state.instances.sorted(by: { $0.key < $1.key }) where instance.data != nil && !instance.stuck {
            if legacy { if state.turn == nil { enable(number, state: &state) } } else { enable(number, state: &state) }
        }
    }

    func unblock() { state.withLock { $0.blocked = false } }

    /// A phone's advertisement heard by the controller: a Device Found event for every socket
    /// while it scans. A passive scan (a monitor's) hears the advertising data alone: it sends no
    /// SCAN_REQ. A discovery hears each advertiser once (its duplicate filter), the advertising data
    /// followed by the scan response, in one event
    /// (hci_event.c process_adv_report, mgmt.c mgmt_device_found), of an advertisement that lists
    /// 0xFD6F among its 16-bit UUIDs: every discovery here is bluetoothd's for FD6F
    /// (BlueZClient.startDiscovery's filter), which the kernel applies to the reports of every
    /// socket (mgmt.c is_filter_match, eir_has_uuids). Returns whether a discovery heard it, which
    /// bluetoothd then reports too.
    @discardableResult
    func phoneHeard(_ advertisement: PhoneAdvertisement) -> Bool {
        state.withLock { state in
            let data: [UInt8]
            if state.scanning {
                guard Self.listsExposureNotification(advertisement.data + advertisement.scanResponse),
                      state.reportedInDiscovery.insert(advertisement.data).inserted else { return false }
                data = advertisement.data + advertisement.scanResponse
            } else if state.scansPassively {
                data = advertisement.data
            } else {
                return false
            }
            state.happened(.deviceFound(controller: Self.controller, DeviceFound(address: [1, 2, 3, 4, 5, 0x46], addressType: 2, rssi: advertisement.rssi,
                                                                                 flags: 4, data: data, laterRSSIs: advertisement.laterRSSIs)))
            return state.scanning
        }
    }

    /// Whether the AD structures of `data` list 0xFD6F among 16-bit service UUIDs (AD types 2, 3).
    static func listsExposureNotification(_ data: [UInt8]) -> Bool {
        var offset = 0
        while offset < data.count, data[offset] > 0, offset + 1 + Int(data[offset]) <= data.count {
            let structure = Array(data[(offset + 1)...(offset + Int(data[offset]))])
            if [0x02, 0x03].contains(structure[0]), stride(from: 1, to: structure.count - 1, by: 2).contains(where: { structure[$0...($0 + 1)] == [0x6F, 0xFD] }) {
                return true
            }
            offset += 1 + Int(data[offset])
        }
        return false
    }

    /// What the lab's monitor-race.py --strand does to the controller while it is off: every
    /// monitor removed (handle 0, which the kernel does while the controller is down), then one
    /// added, which the kernel fails, and strands where it strands one.
    func strandMonitor() {
        state.withLock { state in
            guard !state.powered else { return }
            state.monitors.removeAll()
            state.happened(.monitorRemoved(controller: Self.controller, handle: 0))
            state.strandedMonitor = kernel.strandsFailedMonitor
        }
    }

    /// The adapter's connectable setting: the kernel re-programs the advertisement on the air, on
    /// a legacy controller as ADV_IND from the public address.
    func setConnectable(_ on: Bool) {
        state.withLock { state in
            state.connectable = on
            if legacy, on, let turn = state.turn, var aired = state.onAir[turn] {
                aired.fromPublicAddress = true
                state.onAir[turn] = aired
                state.history.append(aired)
            }
            state.happened(.newSettings(controller: Self.controller, state.settings))
        }
    }

    /// Another program adds an advertisement (bluetoothd for a client, `btmgmt add-adv`): the
    /// lowest free instance, as bluetoothd takes.
    @discardableResult
    func otherProgramAdds() -> UInt8? {
        state.withLock { state in
            guard state.powered, let free = (1...maximumInstances).first(where: { state.instances[$0] == nil }),
                  legacy || state.instances.count < Int(maximumInstances) else { return nil }
            state.instances[free] = Instance(owner: .other, data: [0x02, 0x01, 0x06])
            if !legacy { enable(free, state: &state) } else if state.onAir.isEmpty { nextTurn(state: &state) }
            state.happened(.advertisingAdded(controller: Self.controller, instance: free))
            return free
        }
    }

    /// The kernel (the controller ended the set, hci_le_ext_adv_term_evt) or another program
    /// (`btmgmt rm-adv`) removes an instance, the radio's too: the radio hears Advertising Removed.
    func removedByAnother(_ instance: UInt8) {
        state.withLock { state in
            guard state.powered, state.instances[instance] != nil else { return }
            removeInstance(instance, by: .other, state: &state)
        }
    }

    func otherProgramRemoves(_ instance: UInt8) {
        state.withLock { state in
            guard state.powered, state.instances[instance]?.owner == .other else { return }
            removeInstance(instance, by: .other, state: &state)
        }
    }

    /// bluetoothd's start: Remove Advertising for every instance when the kernel lists any
    /// (src/advertising.c, read_adv_features_callback), and every monitor removed by one Remove
    /// Advertisement Monitor of handle 0 (src/adapter.c, reset_adv_monitors), whose one event
    /// carries that handle, 0 (mgmt_remove_adv_monitor_complete), whether or not there were any.
    func bluetoothdStarts() {
        state.withLock { state in
            guard state.present else { return }
            state.monitors.removeAll()
            state.happened(.monitorRemoved(controller: Self.controller, handle: 0))
            let count = UInt8(state.instances.count)
            guard state.powered, state.instances.keys.contains(where: { $0 <= count }) else { return }
            for instance in state.instances.keys.sorted() where !state.instances[instance]!.stuck {
                removeInstance(instance, by: .other, state: &state)
            }
        }
    }

    /// Another controller of the same machine (hci1), whose events every management socket hears:
    /// another program's advertisements added and removed there (numbered as this controller's
    /// own may be), its power and connectable settings, its monitors, its discoveries.
    static let another: UInt16 = 1

    static func anotherControllersEvents(numbered instance: UInt8, monitor: UInt16) -> [ManagementEvent] {
        [.advertisingAdded(controller: another, instance: instance), .advertisingRemoved(controller: another, instance: instance),
         .newSettings(controller: another, [.powered, .le, .connectable]), .newSettings(controller: another, [.le]),
         .newSettings(controller: another, [.powered, .le]), .monitorRemoved(controller: another, handle: 0),
         .monitorRemoved(controller: another, handle: monitor), .discovering(controller: another, addressTypes: leAddressTypes, active: true),
         .discovering(controller: another, addressTypes: leAddressTypes, active: false)]
    }

    /// The kernel lists `another` controller beside this one (Read Controller Index List).
    func listsAnotherController() { state.withLock { $0.anotherListed = true } }

    /// Queues an event of `another` controller's for the radio's watch.
    func happensOnAnotherController(_ event: ManagementEvent) { state.withLock { $0.happened(event) } }

    /// An LE connection begins (the kernel heard a paired device) or is made or given up.
    func setConnecting(_ on: Bool) { state.withLock { $0.connecting = on && $0.powered } }

    /// A discovery starts or ends (anyone's: the kernel runs one at a time), which every socket hears.
    func setScanning(_ on: Bool) { state.withLock { setScanning(on, state: &$0) } }

    private func setScanning(_ on: Bool, state: inout State) {
        let scanning = on && state.powered
        guard scanning != state.scanning else { return }
        state.scanning = scanning
        state.reportedInDiscovery = []
        let event = ManagementEvent.discovering(controller: Self.controller, addressTypes: leAddressTypes, active: scanning)
        if state.heldDiscovering != nil { state.heldDiscovering?.append(event) } else { state.happened(event) }
    }

    /// The radio reads the kernel's Discovering events late, after its wait for them: a loaded
    /// machine, or (make test's lab of 2026-11-29) a management watch cancelled under the radio.
    func holdDiscoveringEvents() { state.withLock { $0.heldDiscovering = $0.heldDiscovering ?? [] } }

    func passOnHeldDiscoveringEvents() {
        state.withLock { state in
            let held = state.heldDiscovering ?? []
            state.heldDiscovering = nil
            held.forEach { state.happened($0) }
        }
    }

    func unplug() {
        state.withLock { state in
            state = State(present: false, powered: false, nextAddress: state.nextAddress, history: state.history, events: state.events,
                          read: state.read, watch: state.watch, commands: state.commands, seconds: state.seconds)
        }
    }

    func plugIn() { state.withLock { $0.present = true; $0.powered = false } }

    // MARK: For the checks

    var snapshot: State { state.withLock { $0 } }

    /// The radio's instances whose data is an EN advertisement.
    func exposureInstances(_ state: State) -> [UInt8] {
        state.instances.filter { $0.value.data.map(Self.isExposureNotification) ?? false }.keys.sorted()
    }

    static func isExposureNotification(_ data: [UInt8]) -> Bool { data.count == 31 && data[9] == 0x6F && data[10] == 0xFD }
}

extension KernelModel.State {
    /// An event the kernel sends the radio's socket, numbered as read.
    mutating func happened(_ event: ManagementEvent) {
        if case .deviceFound(let controller, _) = event, let reportsPassed, controller != reportsPassed { return }
        read = read.next
        events.append((event, read))
    }

    var settings: ReadControllerInformation.Settings {
        var settings: ReadControllerInformation.Settings = [.le, .bredr]
        if powered { settings.insert(.powered) }
        if connectable { settings.insert(.connectable) }
        return settings
    }
}

extension Result where Failure == ManagementError {
    var status: UInt8 {
        switch self {
        case .success: return 0
        case .failure(let error): return error.status ?? 0xFF
        }
    }
}

extension UInt16 {
    var littleEndianBytes: [UInt8] { [UInt8(truncatingIfNeeded: self), UInt8(truncatingIfNeeded: self >> 8)] }
}

extension UInt32 {
    var littleEndianBytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: self >> (8 * $0)) } }
}

/// An advertisement a phone sends, with its scan response (which only an active scan asks for).
struct PhoneAdvertisement: Sendable {
    var data: [UInt8]
    var scanResponse: [UInt8] = []
    var rssi: Int8 = -60
    /// The RSSIs of its receptions after the first that the management socket joined to its
    /// report while that waited (`DeviceFound.laterRSSIs`).
    var laterRSSIs: [Int8] = []
    /// What bluetoothd's ServiceData holds of it for 0xFD6F, nil when nothing: the data of its last
    /// FD6F structure, of the advertisement and the scan response, in any UUID form and of any
    /// length (src/device.c add_service_data replaces an earlier one).
    var bluetoothdServiceData: [UInt8]?

    /// An EN advertisement as the specification has it: the UUID list, then `serviceData`.
    static func exposureNotification(_ serviceData: [UInt8]) -> PhoneAdvertisement {
        PhoneAdvertisement(data: [3, 0x03, 0x6F, 0xFD, UInt8(3 + serviceData.count), 0x16, 0x6F, 0xFD] + serviceData, bluetoothdServiceData: serviceData)
    }
}
