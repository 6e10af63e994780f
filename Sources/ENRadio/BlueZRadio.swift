import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENStore
import ENSystemd
import Glibc

/// The agent's radio: the adapter through bluetoothd, the advertisement and the scan through the
/// kernel's management interface (both injected: enagentd wires the real ones in, tests a model).
///
/// bluetoothd 5.66 cannot send the EN advertisement as the specification has it: it refuses
/// Flags on a non-connectable (broadcast) advertisement and ignores MinInterval/MaxInterval
/// outside experimental mode, so its advertisements went out at 1280 ms without Flags. The
/// management interface takes the interval and the exact AD bytes per instance.
/// enagentd takes the adapter's highest free instance (bluetoothd hands out the lowest first),
/// never one another program added, and adds it again whenever bluetoothd returns (bluetoothd
/// clears every instance when it starts). It remembers its instance in the store, so that one
/// left by a run that was killed is removed at the next start, not kept beside a new one. No
/// instance timeout (see AddExtendedAdvertisingParameters): with one, the lab's advertisements
/// ended after about a second.
///
/// The scan is bluetoothd's discovery (active, started only while the advertisement is on the air,
/// so that its scan requests keep a random address: `startScan`), or passive: an advertisement
/// monitor for 0xFD6F service data (`AddAdvertisementPatternsMonitor`) makes the kernel scan
/// without SCAN_REQs, so nothing leaves the radio, and EN advertisements are not scannable, so
/// nothing is lost. Either way the sightings are the kernel's Device Found events on the agent's
/// management socket (`sightingsFromBluetoothd`), bluetoothd's reports only without it. Passive
/// is the default only on kernels known to be fixed (`ScanMode.default(kernelRelease:)`): kernel
/// 6.1 frees a monitor's pending command when the adapter powers off while the command is queued,
/// and then uses it (an oops in hci_cmd_sync_work in the lab, at an rfkill block during a scan's
/// start; the Bluetooth stack is dead until a reboot). A kernel without monitors (before 5.10)
/// gets the discovery in any case.
///
/// Lives on one serial queue (`queue`), the agent's: the agent calls it there, the kernel's events
/// are handled there between its calls (or in line where a call must know what the kernel said
/// before a reply: `advertise`), and bluetoothd's signals hop onto it. Its advertisement and its
/// scan are phases (`AdvertisementPhase`, `ScanPhase`), each changed only through its `enter`.
public final class BlueZRadio: Radio {
    public enum Failure: RadioProblemError, CustomStringConvertible {
        case noAdapter(String?)
        case poweredOff(String)
        case connectable(String)
        case shared(String)
        case cannotAdvertise(String)
        case blocked(String, RadioKill)

        public var description: String {
            switch self {
            case .noAdapter(let name?): return "BlueZ has no adapter \(name)"
            case .noAdapter(nil): return "BlueZ has no LE adapter"
            case .poweredOff(let name): return "the adapter \(name) is powered off (set power-on to let enagentd switch it on)"
            // Said as the status says it: one sentence per problem (AgentStatus.entry).
            case .connectable(let name), .shared(let name): return problem.line(.adapter(name))
            case .blocked(let name, let kill): return "\(name) is switched off by \(kill.remedy)"
            case .cannotAdvertise(let name):
                return "every advertising instance of \(name) is taken by other programs ('btmgmt --index \(name.dropFirst(3)) advinfo' lists them)"
            }
        }

        public var problem: AgentStatus {
            switch self {
            case .noAdapter, .cannotAdvertise: return .noAdapter
            case .poweredOff, .blocked: return .bluetoothOff
            case .connectable: return .adapterConnectable
            case .shared: return .adapterShared
            }
        }
    }

    /// An advertisement or a scan put off (`RadioPostponement`).
    public enum Postponed: RadioPostponement, CustomStringConvertible {
        case connectionBeingMade(String)
        case bluetoothdSettingUp(String)

        public var description: String {
            switch self {
            case .connectionBeingMade(let name):
                return "the new identifier waits while the kernel makes an LE connection on \(name), a BT 4.x adapter: it would go out "
                    + "from the previous identifier's address, which the kernel keeps meanwhile"
            case .bluetoothdSettingUp(let name):
                return "the scan waits while bluetoothd, just started, sets \(name) up: a passive scan's reports reach bluetoothd's "
                    + "management socket too, and among a crowd it could queue no reply behind them"
            }
        }
    }

    private let client: any BlueZAdapters
    private let management: any ManagementInterface
    /// How rfkill blocks an adapter (`RadioKill.block` but in tests).
    private let killSwitch: @Sendable (_ adapter: String) -> RadioKill?
    /// The adapter configured; nil for the first that can advertise.
    private let configuredAdapter: AdapterChoice?
    private let mayPowerOn: Bool
    private let store: any RadioAgentStore
    /// What this radio and those before it learnt of bluetoothd's run: whether its discovery stalled.
    private let bluetoothd: BluetoothdCondition
    /// Whether the kernel is making an LE connection on a controller (`LEConnections`).
    private let leConnectionBeingMade: @Sendable (_ controller: UInt16) -> Bool
    /// Lets `seconds` pass (the real clock but in tests): the wait for the kernel's word that a
    /// discovery runs (`awaitDiscovery`).
    private let pause: @Sendable (_ seconds: Double) -> Void
    /// Seconds on a clock that only goes forward (the real one but in tests): how long bluetoothd
    /// has been setting the adapter up (`awaitBluetoothdsSetUp`).
    private let uptime: @Sendable () -> Double
    /// The adapter's advertising channel TX power, in dBm, asked of its controller (`ControllerTransmitPower`).
    private let channelTransmitPower: @Sendable (_ adapter: String) throws -> Int8
    private let logger: Logger
    /// The radio's queue, shared with the agent that calls it.
    public let queue: DispatchQueue
    private let onQueue: QueueBound<State>

    private var my: State {
        get { onQueue.value }
        _modify { yield &onQueue.value }
    }

    /// How the radio scans: passively through a kernel advertisement monitor (a kernel that
    /// refuses one turns it active), or actively through bluetoothd's discovery.
    public enum ScanMode: String, Sendable { case passive, active }

    /// The store's note of this radio's scan monitor: not read yet (nor a monitor a killed run
    /// left looked for), or as last read or written.
    private enum MonitorNote: Equatable {
        case unread
        case known(AdapterNumber?)
    }

    private struct State {
        var advertisement = AdvertisementPhase.none
        /// Why there is no advertisement on the air, as the radio last found
        /// (`RadioActivity.advertisingProblem`); changed with the phase (`enter`), at a refusal
        /// (`advertise`), a loss (`follow`) and a scan's start.
        var advertisingProblem: AgentStatus?
        /// Why the last scan asked for was refused (`RadioActivity.scanProblem`), until one starts.
        var scanProblem: AgentStatus?
        var scan = ScanPhase.idle
        var scanMode: ScanMode
        var monitorNote = MonitorNote.unread
        /// The empty instances this radio left in place of its own on adapters that were off
        /// (`remove`), by adapter: its own, to be removed once the adapter is up.
        var standIns = [String: Set<UInt8>]()
        /// The adapter chosen when none is configured, or found at the configured address: asked
        /// for by name from then on (for an address, while it still has that address).
        var chosenAdapter: String?
        /// The adapter found last, with its address (BlueZ's Address: the controller's own).
        var lastFound: AdapterIdentity?
        /// The agent, told of what the radio did unasked (`watchManagement`).
        var listener = Listener()
        /// The discoveries the kernel runs, by controller, with the address types each was started
        /// for (the watch's Discovering events): the agent's, another program's, or one left by a
        /// bluetoothd that exited.
        var discoveries = [UInt16: UInt8]()
        /// The kernel answered the last monitor with Busy (`startScan`): scans go through
        /// bluetoothd's discovery until it takes one again.
        var monitorRefused = false
        /// The management watch runs: the kernel's Discovering events prove a discovery, and its
        /// Device Found events are the scan's sightings.
        var watching = false
        /// Withdrawals from bluetoothd's discovery it has not answered yet (`noteStall`): until it
        /// reads them it may start that discovery again for the agent (`stopStaleDiscovery`), and
        /// the discoveries stopped for a scan meanwhile.
        var withdrawalsUnread = 0
        var staleDiscoveriesStopped = 0
        /// The adapter bluetoothd offered last, for while it does not answer (`adapter`), and
        /// whether it has offered it since it (re)started.
        var lastAdapter: Adapter?
        var bluetoothdSettled = false
        /// Whether bluetoothd may be setting the adapters up, for which a passive scan waits (`awaitBluetoothdsSetUp`).
        var setUp = BluetoothdSetUp.done
        /// The radio's first call was made (`begin`).
        var begun = false
        /// The run ended with a stall noted on this controller, and no discovery of the kernel's
        /// there was stopped for it yet (`endRun`): the first to start within `lateDiscoveryWatch` goes.
        var lateDiscoveryOn: UInt16?
        /// Calls of the radio's in a row that bluetoothd left unanswered since it (re)started,
        /// before it ever offered the adapter.
        var unansweredSinceStart = 0
        /// Since the last scan through bluetoothd's discovery began: the EN advertisements the kernel
        /// reported in it (its Device Found events reach every socket), and those bluetoothd passed
        /// on, also after the scan's end (a busy bluetoothd's trail the kernel's by seconds); and
        /// the scans in a row of which it passed none (`DiscoveryStall.reportsDropped`).
        var heardByKernel = 0
        var passedByBluetoothd = 0
        var scansUnpassed = 0
        /// The advertising channel TX power of the adapter named, once its controller told it; a
        /// nil level: it was asked and did not answer (said once), and is asked again.
        var channelPower: (adapter: String, level: Int8?)?
        /// The TX power the log said last, and of which adapter (`transmitPower`).
        var saidPower: (adapter: String, level: Int8)?
    }

    /// bluetoothd's discovery does not scan (`DiscoveryStall`): scans are passive, through a kernel
    /// monitor, until bluetoothd returns (its name owned anew) or its discovery is seen to run.
    private var discoveryStalled: Bool { bluetoothd.stalled != nil }

    /// bluetoothd's setting up of the adapters, as a passive scan waits for it: done (every LE
    /// controller offered advertising), to be looked at (the radio's start, bluetoothd's exit or
    /// return), or found under way at an `uptime`.
    private enum BluetoothdSetUp { case done, toBeLookedAt, underWay(since: Double) }

    /// Weak: the agent holds the radio.
    private struct Listener { weak var agent: (any RadioListener)? }

    public static func identity(of adapter: Adapter) -> AdapterIdentity {
        AdapterIdentity(name: adapter.name, address: BluetoothAddress(adapter.address))
    }

    /// `queue`: the radio's, where it is called and its events are handled (the agent's);
    /// `bluetoothd`: what the radios before this one learnt of bluetoothd, on the same queue.
    public init(client: any BlueZAdapters, management: any ManagementInterface, adapter: AdapterChoice?, mayPowerOn: Bool, scanMode: ScanMode,
                store: any RadioAgentStore, logger: Logger, queue: DispatchQueue, bluetoothd: BluetoothdCondition? = nil,
                killSwitch: @escaping @Sendable (_ adapter: String) -> RadioKill? = { RadioKill.block(of: $0) },
                leConnectionBeingMade: @escaping @Sendable (_ controller: UInt16) -> Bool = { LEConnections.beingMade(controller: $0) },
                pause: @escaping @Sendable (_ seconds: Double) -> Void = { usleep(UInt32($0 * 1_000_000)) },
                uptime: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
                channelTransmitPower: @escaping @Sendable (_ adapter: String) throws -> Int8 = { try ControllerTransmitPower.advertising(adapter: $0) }) {
        self.client = client
        self.pause = pause
        self.uptime = uptime
        self.channelTransmitPower = channelTransmitPower
        self.management = management
        self.killSwitch = killSwitch
        self.leConnectionBeingMade = leConnectionBeingMade
        self.queue = queue
        onQueue = QueueBound(State(scanMode: scanMode), queue: queue)
        self.logger = logger
        self.configuredAdapter = adapter
        self.mayPowerOn = mayPowerOn
        self.store = store
        self.bluetoothd = bluetoothd ?? BluetoothdCondition(queue: queue)
    }

    /// At the radio's first call, before bluetoothd is asked anything: what an earlier radio learnt
    /// of bluetoothd, and what a run killed with SIGKILL left in the kernel.
    private func begin() {
        my.begun = true
        my.setUp = .toBeLookedAt
        withdrawLeftover()
        recallStall()
    }

    /// The instance a run killed with SIGKILL left (the store's note) goes through the kernel at
    /// once: a stalled bluetoothd keeps the radio from the adapter for half a minute
    /// (`unansweredCallsBeforeTheKernelsAdapter`), meanwhile the kernel keeps the old RPI on the air
    /// past its interval, and re-programs it if the adapter turns connectable. Under the RootCanal
    /// crowd (CI of 2026-12-01, 01:52) agent a's leftover stayed on the air 43 s after its restart,
    /// 10 s of them on a connectable hci0. One the kernel cannot remove now (the controller off,
    /// the set stuck after rfkill) stays noted for the first advertisement (`advertise`).
    private func withdrawLeftover() {
        guard let note = try? remembered(StoreSettings.advertisingInstance), let instance = UInt8(exactly: note.number),
              let controller = Adapter.index(ofName: note.adapter) else { return }
        do throws(ManagementError) {
            _ = try management.send(RemoveAdvertising(instance: instance), controller: controller)
            logger.debug("advertisement: instance \(instance) an earlier run left on \(note.adapter) removed")
        } catch {
            guard Self.alreadyGone(error) else {
                return logger.debug("the instance \(instance) an earlier run left on \(note.adapter) stays until the first advertisement: \(error)")
            }
        }
        do { try store.set(StoreSettings.advertisingInstance, to: nil) } catch {
            logger.debug("the note of the instance an earlier run left on \(note.adapter) stays: \(error)")
        }
    }

    /// A stall an earlier radio (or process) noted holds while the same bluetoothd runs: this radio
    /// takes the adapter that one had from the kernel and scans passively from its first scan, and
    /// withdraws from bluetoothd's discovery as that one did (`noteStall`), whose withdrawal
    /// bluetoothd may not have read yet. A stall of a bluetoothd that restarted since, or on an
    /// adapter the configuration no longer means, is forgotten: bluetoothd is asked anew. Once, at
    /// the radio's first call.
    private func recallStall() {
        guard let stall = bluetoothd.stalled else { return }
        guard configuredAdapter?.means(name: stall.adapter.name, address: stall.adapter.address) ?? true,
              let owner = stall.owner, (try? client.serviceOwner()) == owner else { return bluetoothd.note(nil) }
        (my.lastAdapter, my.chosenAdapter, my.bluetoothdSettled) = (stall.adapter, stall.adapter.name, true)
        publishing { my.lastFound = Self.identity(of: stall.adapter) }
        withdrawFromDiscovery(on: stall.adapter)
        logger.notice("bluetoothd still runs as when an earlier radio found that it does not scan on \(stall.adapter.name): \(Self.whileStalled)")
    }

    /// The configured adapter, else the first that can advertise; powered on when allowed. While
    /// bluetoothd does not answer (`DiscoveryStall`: under the lab's flood every call of its timed
    /// out, 10 s each), the adapter found last, as long as the kernel has it powered; when it has
    /// never answered, the kernel's own.
    public func adapter() throws -> Adapter {
        if !my.begun { begin() }
        if discoveryStalled, let adapter = try adapterAsTheKernelHasIt() { return adapter }
        do {
            let adapter = try findAdapter()
            my.lastAdapter = adapter
            my.bluetoothdSettled = true
            my.unansweredSinceStart = 0
            return adapter
        } catch {
            guard let stall = DiscoveryStall(call: "Get of the adapter's properties", failure: error) else { throw error }
            if !my.bluetoothdSettled {
                // A bluetoothd that has not offered the adapter since it started is starting, not
                // stalled (the lab's restarted bluetoothd left a Get unanswered for 10 s), unless it
                // stays silent: among the RootCanal lab's 300 phones one left an agent that started
                // there without an answer for two minutes. The kernel then says which adapter it is.
                my.unansweredSinceStart += 1
                guard my.unansweredSinceStart >= Self.unansweredCallsBeforeTheKernelsAdapter, let adapter = try adapterFromTheKernel() else { throw error }
                my.lastAdapter = adapter
            }
            guard let last = my.lastAdapter else { throw error }
            noteStall(stall, on: last)
            guard let adapter = try adapterAsTheKernelHasIt() else { throw error }
            return adapter
        }
    }

    /// Calls left unanswered in a row (10 s each) after which a bluetoothd that has not offered the
    /// adapter since it started is taken as stalled, not starting: three times the longest start
    /// the labs saw (a restarted bluetoothd left one Get unanswered), since a stall lasts until
    /// bluetoothd restarts, with passive scans on a kernel where they are not the default.
    static let unansweredCallsBeforeTheKernelsAdapter = 3

    /// The adapter the configuration means as the kernel has it (its controllers, their addresses
    /// and settings): the configured one, or the one chosen before, or the first with LE, as
    /// `findAdapter` takes bluetoothd's; nil when the kernel has none of them.
    private func adapterFromTheKernel() throws -> Adapter? {
        let controllers = try management.send(ReadControllerIndexList(), controller: ReadControllerIndexList.noController).map {
            (name: "hci\($0)", information: try management.send(ReadControllerInformation(), controller: $0))
        }
        let name: String?
        switch configuredAdapter {
        case let choice?: name = choice.resolve(among: controllers.map { ($0.name, $0.information.address.description) })
        case nil: name = my.chosenAdapter ?? controllers.first { $0.information.supported.contains(.le) }?.name
        }
        guard let name, let information = controllers.first(where: { $0.name == name })?.information else { return nil }
        if configuredAdapter == nil { my.chosenAdapter = name }
        let adapter = Adapter(path: BlueZ.adapterPath(name), address: information.address.description, powered: information.current.contains(.powered),
                              canAdvertise: information.supported.contains(.le))
        publishing { my.lastFound = Self.identity(of: adapter) }
        return adapter
    }

    /// The adapter found last, as the kernel has it, for while bluetoothd does not answer; one the
    /// kernel no longer has is gone. Off, it is switched on through the kernel where the radio may
    /// switch it on (bluetoothd, which would, answers nothing: each call of the radio's to it would
    /// cost 10 s, and the agent stayed off the air), else nil.
    private func adapterAsTheKernelHasIt() throws -> Adapter? {
        guard var adapter = my.lastAdapter, let controller = adapter.index else { return nil }
        let settings: ReadControllerInformation.Settings
        do throws(ManagementError) { settings = try management.send(ReadControllerInformation(), controller: controller).current } catch {
            guard error.status == Self.invalidIndex else { throw error }
            throw Failure.noAdapter(adapter.name)
        }
        if !settings.contains(.powered) {
            guard mayPowerOn else { return nil }
            try prepareToSwitchOn(adapter)
            _ = try management.send(SetPowered(true), controller: controller)
            logger.info("switched \(adapter.name) on through the kernel: bluetoothd does not answer")
        }
        adapter.powered = true
        return adapter
    }

    /// Before `adapter` is switched on: a blocked one cannot be, and this agent's instance goes
    /// first, as at power-on the kernel enables the instances it kept, from new addresses (the
    /// loss may not have reached the agent yet).
    private func prepareToSwitchOn(_ adapter: Adapter) throws {
        if let kill = killSwitch(adapter.name) { throw Failure.blocked(adapter.name, kill) }
        if let own = my.advertisement.advertisement, own.adapter.name == adapter.name {
            enter(.none, because: "\(adapter.name) is being switched on, when the kernel would enable it again from a new address")
            try withdraw(own.instance, from: adapter)
        }
    }

    /// `call` of bluetoothd's, made off the radio's queue while the kernel's events are handled
    /// on it: a stalled bluetoothd leaves a call unanswered for 10 s, and a scan the kernel ends
    /// meanwhile must end then, in the agent's status and its record of the scan (the RootCanal
    /// crowd beside a load, 2026-11-30 09:06: a Get left unanswered held up the kernel's end of the
    /// scan's discovery for 5.8 s, which the agent recorded as scanning, and bluetoothd's restart of
    /// the discovery within them counted as the agent's scan). Only for the calls that begin the
    /// radio's work (`adapter`), where an event handled during the call is as one handled before it.
    private func handingOverEvents<Answer: Sendable>(_ call: @escaping @Sendable () throws -> Answer) throws -> Answer {
        guard my.watching else { return try call() }
        let work = BackgroundWork(call)
        // The reports too: the queue is held for as long as bluetoothd takes (10 s unanswered).
        while !work.ends(within: .milliseconds(Self.eventTurnMilliseconds)) { management.deliverPending(withReports: true) }
        return try work.result()
    }

    /// How often the kernel's events are handed over while bluetoothd is asked (`handingOverEvents`).
    private static let eventTurnMilliseconds = 50

    private func findAdapter() throws -> Adapter {
        let chosen = my.chosenAdapter
        let found: Adapter?
        switch configuredAdapter {
        case .name(let name)?:
            found = try handingOverEvents { [client] in try client.adapter(named: name) }
        case let choice?:
            // The name it had last is asked first (one adapter's properties: the list carries
            // every device BlueZ has seen); the list only when that name has another address now
            // (a replug or a reboot: the kernel numbers the controllers as it finds them).
            if let chosen, let last = try handingOverEvents({ [client] in try client.adapter(named: chosen) }), choice.means(name: last.name, address: last.address) {
                found = last
            } else {
                let adapters = try handingOverEvents { [client] in try client.adapters() }
                let name = choice.resolve(among: adapters.map { ($0.name, $0.address) })
                found = adapters.first { $0.name == name }
                my.chosenAdapter = found?.name
            }
        case nil:
            if let chosen {
                found = try handingOverEvents { [client] in try client.adapter(named: chosen) }
            } else {
                // Chosen once for the process's life: a restarting bluetoothd offers the adapters in
                // any order, not yet powered, and another adapter must not take over meanwhile.
                found = try handingOverEvents { [client] in try client.adapters() }.first(where: \.canAdvertise)
                my.chosenAdapter = found?.name
            }
        }
        guard var adapter = found else { throw Failure.noAdapter(configuredAdapter?.description ?? chosen) }
        publishing { my.lastFound = Self.identity(of: adapter) }
        if !adapter.powered {
            guard mayPowerOn else { throw Failure.poweredOff(adapter.name) }
            // bluetoothd answers only org.bluez.Error.Failed when asked to power a blocked adapter on.
            try prepareToSwitchOn(adapter)
            try client.setPowered(adapter, true)
            adapter.powered = true
        }
        return adapter
    }

    public func advertise(_ serviceData: (Int8?) throws -> [UInt8]) throws {
        do {
            try advertiseOnTheAdapter(serviceData)
        } catch {
            // Put off, the advertisement on the air stays as it was, and so does what is said of it.
            throw noted(error, as: \.advertisingProblem)
        }
    }

    private func advertiseOnTheAdapter(_ serviceData: (Int8?) throws -> [UInt8]) throws {
        let adapter = try adapter()
        guard let controller = adapter.index else { throw Failure.noAdapter(adapter.name) }
        // While a connection is being initiated the kernel keeps a legacy controller's random
        // address for the next advertisement (hci_enable_advertising_sync → hci_set_random_addr_sync):
        // the new RPI would go out from the previous one's address, which links them. Checked before
        // the previous advertisement is taken in hand: postponed, it stays on the air as it was.
        let previousPhase = my.advertisement
        if let previous = previousPhase.advertisement, previous.legacy && previous.adapter.name == adapter.name, leConnectionBeingMade(controller) {
            throw Postponed.connectionBeingMade(adapter.name)
        }
        let scanWaited = my.scan.waitsForAdvertisement
        try replace(previousPhase, by: serviceData, on: adapter, controller: controller)
        // The scan that waited starts with the advertisement, here or as a pause for it ends.
        if scanWaited { startWaitingScan(on: adapter) }
    }

    /// Puts a new advertisement in place of the one in `previousPhase`, which stays this radio's
    /// to withdraw until it is removed (`.replacing`): a failure before then (the adapter switched
    /// off in the middle) leaves it in the kernel, which enables it again at power-on, from a new
    /// address.
    private func replace(_ previousPhase: AdvertisementPhase, by serviceData: (Int8?) throws -> [UInt8], on adapter: Adapter, controller: UInt16) throws {
        if previousPhase.advertisement != nil { enter(.replacing(previousPhase), because: "a new advertisement replaces it") }
        do {
            try advertise(serviceData, on: adapter, controller: controller, replacing: previousPhase)
        } catch {
            if case .replacing(let previous) = my.advertisement { enter(previous, because: "the new advertisement failed, and the previous is still in the kernel") }
            throw error
        }
    }

    /// The previous advertisement of a replacement is gone from the kernel.
    private func previousGone(_ reason: String) {
        if case .replacing = my.advertisement { enter(.none, because: reason) }
    }

    private func advertise(_ serviceData: (Int8?) throws -> [UInt8], on adapter: Adapter, controller: UInt16, replacing previousPhase: AdvertisementPhase) throws {
        let previous = previousPhase.advertisement
        if let previous, previous.adapter.name != adapter.name {
            try remove(previous.instance, from: previous.adapter)
            previousGone("removed from \(previous.adapter.name)")
        }
        let (information, settingsRead) = try management.exchange(ReadControllerInformation(), controller: controller)
        let settings = information.current
        let kept = previous.flatMap { $0.adapter.name == adapter.name ? $0.instance : nil }
        // A run killed with SIGKILL left its instance, unless the radio's first call removed it (`withdrawLeftover`).
        let own = try kept ?? rememberedInstance(on: adapter)
        guard !settings.contains(.connectable) else {
            // The kernel re-programs the advertisement on the air when the adapter turns connectable:
            // on a legacy controller the last RPI goes on in ADV_IND from the adapter's own address.
            // It must not stay there (nor past its interval), so it goes before the agent waits.
            if let own { try withdraw(own, from: adapter) }
            previousGone("withdrawn from a connectable adapter")
            throw Failure.connectable(adapter.name)
        }
        let features = try management.send(ReadAdvertisingFeatures(), controller: controller)
        let legacy = !features.hasExtendedAdvertising
        // The same with no advertisement of this radio's on the adapter: the address in force is
        // then another's, or that of one removed meanwhile (bluetoothd's start, a killed run).
        if legacy, case .none = my.advertisement, leConnectionBeingMade(controller) { throw Postponed.connectionBeingMade(adapter.name) }
        // A monitor a killed run left keeps the kernel scanning, which on a legacy controller
        // refuses the advertisement's new address: it goes before the advertisement comes.
        try removeLeftoverMonitor(on: adapter)
        // The kernel's list as this call leaves it: what it removes, and what the survey releases, is gone.
        var listed = Set(features.instances)
        if kept == nil, let own {
            _ = try removeUnlessStuck(own, from: adapter)
            listed.remove(own)
        }
        // Empty stand-ins left while the adapter was off (instances held to find a free one, when
        // it went off meanwhile) go next: on a legacy controller they would take turns with ours.
        // Listed or not: the kernel's list hides instances numbered above the count.
        let standIns = (my.standIns[adapter.name] ?? []).filter { $0 != own }
        for standIn in standIns.sorted() {
            _ = try removeUnlessStuck(standIn, from: adapter)
            listed.remove(standIn)
        }
        // A legacy controller has one advertising set, which the kernel lends to each instance in
        // turn (2 s each, unless the instance names its turn), with a new random address every
        // turn: beside another program's, the identifier would go out from several addresses. The
        // agent steps aside until it is alone (and asks no more of the kernel than these two reads
        // a second meanwhile).
        if legacy && features.instances.contains(where: { $0 != own && !standIns.contains($0) }) {
            if let kept {
                try pausingScan(on: adapter, if: true) { try withdraw(kept, from: adapter) }
                previousGone("withdrawn from a shared adapter")
            }
            throw Failure.shared(adapter.name)
        }
        // Else the highest instance that no other program holds, which the kernel's list may not show.
        var instance: UInt8
        if let kept {
            instance = kept
        } else {
            let survey = try freeInstance(on: adapter, controller: controller)
            // Kernel 6.1 lists only the instances numbered up to their count: another program's
            // instance 2 beside none of this radio's is hidden from the check above, not from the survey.
            if legacy && !survey.othersInUse.subtracting(standIns).subtracting(own.map { [$0] } ?? []).isEmpty {
                throw Failure.shared(adapter.name)
            }
            guard let free = survey.free else { throw Failure.cannotAdvertise(adapter.name) }
            instance = free
            listed.remove(free)
        }
        try pausingScan(on: adapter, if: legacy) {
            // A fresh instance, so the kernel gives it a fresh non-resolvable address. The kept one
            // goes even when the kernel does not list it (only instances numbered up to their count
            // are): new data in an instance on the air is written to a legacy set before the kernel
            // disables it for a new address (hci_start_adv_sync), so the new RPI would go out first
            // from the previous one's address.
            if listed.contains(instance) || instance == kept {
                let removed = try removeUnlessStuck(instance, from: adapter)
                if instance == kept { previousGone(removed ? "its instance removed for a fresh address" : "its instance stuck, forgotten") }
                if !removed {
                    guard let free = try freeInstance(on: adapter, controller: controller).free else { throw Failure.cannotAdvertise(adapter.name) }
                    instance = free
                }
            }
            if instance != own { try store.set(StoreSettings.advertisingInstance, to: AdapterNumber(adapter: adapter.name, number: UInt16(instance))) }
            let interval = ExposureNotificationAdvertisement.intervalMilliseconds
            // The longest turn (about 18 h, beyond any identifier's interval): on a legacy controller
            // the kernel ends a turn of 2 s by default and lends the set to another program's
            // instance added meanwhile, then back to this one from a new address. With this turn the
            // other waits until the radio steps aside, however late it hears of it (a busy machine).
            let parameters = try management.send(AddExtendedAdvertisingParameters(
                instance: instance, flags: [.useDuration, .useInterval], durationSeconds: .max,
                interval: AddExtendedAdvertisingParameters.slots(milliseconds: interval.lowerBound)...AddExtendedAdvertisingParameters.slots(milliseconds: interval.upperBound),
                transmitPower: 0), controller: controller)
            let advertisement = Advertisement(instance: instance, adapter: adapter, legacy: legacy)
            enter(.adding(advertisement, since: settingsRead), because: "its parameters are in")
            // The adapter may have turned connectable, or another program added an advertisement,
            // since the kernel was asked for its settings and instances: what the kernel said before
            // this reply is heard now, before the data goes out (`handle`). Not the reports: a
            // crowd's held the data back 7 s, with nothing of this agent's on the air meanwhile.
            management.deliverPending(withReports: false)
            if case .unfit(_, let failure) = my.advertisement {
                // The instance is the previous one's, kept, unless that was stuck and forgotten.
                try withdraw(instance, from: adapter)
                enter(.none, because: "withdrawn before its data went out")
                throw failure
            }
            let data = try serviceData(transmitPower(selected: parameters.transmitPower, by: adapter))
            do {
                try management.send(AddExtendedAdvertisingData(
                    instance: instance, advertisingData: ExposureNotificationAdvertisement.payload(serviceData: data, adapterRunsBREDR: settings.contains(.bredr))),
                    controller: controller)
            } catch {
                // The new data is not on the air. The kernel removed the instance if it was new
                // (add_adv_complete, whose Advertising Removed goes to every socket but this
                // radio's), not the kept one, which goes now: held, it would pass for this radio's
                // advertisement on the air, which an active scan waits for (`startScan`). One the
                // kernel will not remove either (stuck after rfkill, 6.1) is still the one the store
                // remembers, removed before the next advertisement as a killed run's is.
                enter(.none, because: "its data was refused")
                if instance == kept { try? withdraw(instance, from: adapter) }
                throw error
            }
            enter(.onAir(advertisement), because: "its data is in")
        }
    }

    /// Runs `body` with the scans on `adapter` paused when `pause` says so. A legacy controller
    /// refuses LE Set Random Address while it scans (Core Vol 4 Part E 7.8.4), and the kernel,
    /// which gives each advertisement it puts on the set a new address, does not pause the scan
    /// for it: the advertisement stays off the air (the agent's is refused, management status
    /// Failed; another program's waits for the kernel's next turn, 2 s on, which may fall in the
    /// next scan again).
    private func pausingScan(on adapter: Adapter, if pause: Bool, _ body: () throws -> Void) throws {
        guard pause else { return try body() }
        // No monitor while paused: a removal heard meanwhile (another program's, its own it does
        // not hear) is not of the scan that resumes with a new one.
        let paused = my.scan.adapter?.name == adapter.name ? my.scan : nil
        var ownDiscoveryLeft = false
        if let paused {
            enter(.paused(adapter), because: "a BT 4.x controller takes an advertisement's new address only while it does not scan")
            do { try stopScan(paused) } catch {
                switch paused {
                case .active, .discoveryStarting: ownDiscoveryLeft = true
                case .idle, .passive, .waitingForAdvertisement, .paused, .stopping: break
                }
            }
        }
        // A discovery the kernel still runs refuses the address all the same: one a bluetoothd
        // that exited left (the kernel runs it on for up to 10.24 s, and no program stops it; the
        // agent's own scan may have ended meanwhile, as bluetoothd could not be asked), or another
        // program's, which bluetoothd starts again once the advertisement is on. Without the
        // watch's word, one the agent could not stop is taken for its own.
        if let controller = adapter.index,
           let addressTypes = my.discoveries[controller] ?? (ownDiscoveryLeft ? leAddressTypes : nil) {
            // Refused when it ended meanwhile (the watch hears of it a moment later): as good.
            _ = try? management.send(StopDiscovery(addressTypes: addressTypes), controller: controller)
        }
        defer { if let paused { resumeScan(on: adapter, ran: !paused.waitsForAdvertisement) } }
        try body()
    }

    /// The scan again after a pause for an advertisement; when it is refused, or it `ran` and now
    /// waits for an advertisement withdrawn meanwhile (the agent steps aside), the agent hears
    /// that its scan stopped and starts one anew: its status never says a scan runs that waits.
    private func resumeScan(on adapter: Adapter, ran: Bool) {
        do {
            try startScan(on: adapter)
            if my.scan.waitsForAdvertisement && ran { my.listener.agent?.scanStopped() }
        } catch {
            enter(.idle, because: "it did not start again: \(error)")
            my.listener.agent?.scanStopped()
        }
    }

    /// The highest instance no other program holds on `controller` (ENBlueZ's
    /// `AdvertisingInstances`), nil when all are taken, and the instances others hold; the
    /// instances held to find it are released, all of them even when one fails.
    private func freeInstance(on adapter: Adapter, controller: UInt16) throws -> (free: UInt8?, othersInUse: Set<UInt8>) {
        let features = try management.send(ReadAdvertisingFeatures(), controller: controller)
        var held = [UInt8]()
        do {
            let survey = try AdvertisingInstances.survey(features) { instance in
                do {
                    _ = try management.send(AddExtendedAdvertisingParameters(instance: instance, flags: [], interval: 0...0, transmitPower: 0),
                                            controller: controller)
                } catch let error as ManagementError where error.status == ManagementError.noResources {
                    return nil
                }
                held.append(instance)
                return try management.send(ReadAdvertisingFeatures(), controller: controller).instances
            }
            try release(held, from: adapter)
            return (survey.highestFree(maximum: features.maximumInstances), survey.inUse)
        } catch {
            try release(held, from: adapter)
            throw error
        }
    }

    private func release(_ instances: [UInt8], from adapter: Adapter) throws {
        var failure: (any Error)?
        for instance in instances {
            do { try remove(instance, from: adapter) } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    /// The instance this agent added on `adapter` in an earlier run (the store's note), if any.
    private func rememberedInstance(on adapter: Adapter) throws -> UInt8? {
        guard let note = try remembered(StoreSettings.advertisingInstance), note.adapter == adapter.name else { return nil }
        return UInt8(exactly: note.number)
    }

    /// A note of this radio's in the store; one that does not read names nothing to remove (the
    /// next write replaces it).
    private func remembered(_ setting: StoreSetting<AdapterNumber>) throws(StoreError) -> AdapterNumber? {
        do throws(StoreError) { return try store.value(setting) } catch .malformedSetting { return nil }
    }

    public func stopAdvertising() throws {
        let phase = my.advertisement
        guard let advertisement = phase.advertisement else { return }
        enter(.none, because: "the agent takes it off the air")
        // Stepping aside for another program's advertisement: the kernel puts that on the set at once.
        var steppingAside = false
        if case .unfit(_, .shared) = phase { steppingAside = true }
        try pausingScan(on: advertisement.adapter, if: steppingAside) {
            try withdraw(advertisement.instance, from: advertisement.adapter)
        }
    }

    /// Removes this agent's instance and, once it is gone, forgets it: a later run has none of
    /// this one's to replace, and the number may go to another program meanwhile. An empty
    /// stand-in (the controller was off) stays remembered, for the next advertisement to remove.
    private func withdraw(_ instance: UInt8, from adapter: Adapter) throws {
        if try remove(instance, from: adapter) == .gone { try store.set(StoreSettings.advertisingInstance, to: nil) }
    }

    private enum Removal { case gone, emptyStandIn }

    /// Removes this agent's instance; one gone already (bluetoothd restarted, the adapter went:
    /// the kernel answers Invalid Parameters or Invalid Index) is as good.
    @discardableResult
    private func remove(_ instance: UInt8, from adapter: Adapter) throws(ManagementError) -> Removal {
        guard let controller = adapter.index else { return .gone }
        do throws(ManagementError) { _ = try management.send(RemoveAdvertising(instance: instance), controller: controller) } catch .unreachable(_, ENETDOWN) {
            // A controller that is off cannot remove an instance (the kernel queues nothing while
            // it is down), and at power-on it enables the instance again from a new address: the
            // old RPI would go out from a second one. Add Advertising replaces it while off, with
            // no data and no timeout (the kernel refuses a timeout while the controller is off);
            // the agent's next advertisement takes the same instance and removes it first.
            try management.send(AddAdvertising(instance: instance, timeoutSeconds: 0, advertisingData: []), controller: controller)
            my.standIns[adapter.name, default: []].insert(instance)
            return .emptyStandIn
        } catch {
            guard Self.alreadyGone(error) else { throw error }
        }
        my.standIns[adapter.name]?.remove(instance)
        return .gone
    }

    /// Removes an instance; false when the kernel cannot. After rfkill closed the controller (not
    /// the kernel's power-off), the kernel keeps instances whose sets the controller lost, and can
    /// neither remove nor change them (the controller refuses to disable an unknown set). Such an
    /// instance is not on the air: another takes the advertisement, and the stuck one is forgotten.
    private func removeUnlessStuck(_ instance: UInt8, from adapter: Adapter) throws(ManagementError) -> Bool {
        do {
            try remove(instance, from: adapter)
            return true
        } catch {
            guard error.status == Self.failed else { throw error }
            return false
        }
    }

    /// The kernel has no such instance or monitor (Invalid Parameters), or no such controller
    /// (Invalid Index): what was to be removed is gone already.
    private static func alreadyGone(_ error: ManagementError) -> Bool { error.status == invalidParameters || error.status == invalidIndex }

    /// Management status codes (BlueZ's doc/mgmt-api.txt).
    private static let unknownCommand: UInt8 = 0x01, failed: UInt8 = 0x03, busy: UInt8 = 0x0A, rejected: UInt8 = 0x0B, notSupported: UInt8 = 0x0C, invalidParameters: UInt8 = 0x0D,
                       invalidIndex: UInt8 = 0x11

    public func startScanning() throws {
        do {
            try startScanningOnTheAdapter()
        } catch {
            throw noted(error, as: \.scanProblem)
        }
        // The radio works: a refusal or loss that stops scans too no longer holds.
        publishing {
            my.scanProblem = nil
            my.advertisingProblem = RadioActivity.problemAfterAScanStarted(my.advertisingProblem)
        }
    }

    /// `error`, a refusal of the radio's unless it put the work off, noted as the problem at `problem`.
    private func noted(_ error: any Error, as problem: WritableKeyPath<State, AgentStatus?>) -> any Error {
        if !(error is any RadioPostponement) { publishing { my[keyPath: problem] = RadioActivity.problem(of: error) } }
        return error
    }

    private func startScanningOnTheAdapter() throws {
        let adapter = try adapter()
        // Another adapter's reports would only slow the reading of this one's events.
        if let controller = adapter.index { management.passReports(only: controller) }
        // A scan the agent lost track of (the adapter went and came back) must not run on beside the new one.
        let previous = my.scan
        if let previousAdapter = previous.adapter {
            enter(.idle, because: "a new scan replaces it")
            do { try stopScan(previous) } catch {
                logger.debug("the previous scan on \(previousAdapter.name) did not stop: \(error)")
            }
        }
        try startScan(on: adapter)
    }

    /// Starts a scan on `adapter` and notes it: passive, through a monitor, or, where the kernel
    /// has no monitors or refuses this one as Busy, bluetoothd's discovery, which may wait for the
    /// advertisement.
    private func startScan(on adapter: Adapter) throws {
        if discoveryStalled, let controller = adapter.index {
            do {
                return try addMonitor(on: adapter, controller: controller)
            } catch let error as ManagementError where [Self.busy, Self.unknownCommand, Self.notSupported].contains(error.status) {
                // No passive scan to be had (a monitor the kernel stranded refuses every next one as
                // Busy until the adapter next goes off): bluetoothd's discovery, asked again, is the
                // only scan left, and one the kernel then runs shows bluetoothd answers again.
                logger.notice("the kernel refuses the scan's monitor on \(adapter.name) (\(error)): asking bluetoothd's discovery again")
            }
        }
        if my.scanMode == .passive, let controller = adapter.index {
            try awaitBluetoothdsSetUp()
            do {
                try addMonitor(on: adapter, controller: controller)
                if my.monitorRefused {
                    my.monitorRefused = false
                    logger.notice("the kernel took the scan's monitor on \(adapter.name) again: scanning passively")
                }
                return
            } catch let error as ManagementError where [Self.unknownCommand, Self.notSupported].contains(error.status) {
                my.scanMode = .active
                logger.notice("scanning actively through bluetoothd's discovery (its scan requests carry an address of the adapter's): "
                              + "the kernel has no passive advertisement monitors (\(error))")
            } catch let error as ManagementError where error.status == Self.busy {
                // Kernel 6.12.117 keeps a monitor it failed (one that reached a controller already
                // down: hci_cmd_sync_queue's ENETDOWN in __add_adv_patterns_monitor) pending, and
                // refuses every later one as Busy until the adapter next goes off
                // (__mgmt_power_off answers every pending command). Meanwhile this scan, and each
                // next one that is refused, is bluetoothd's discovery, with its rules below.
                if my.monitorRefused {
                    logger.debug("still scanning through bluetoothd's discovery: \(error)")
                } else {
                    my.monitorRefused = true
                    logger.notice("scanning actively through bluetoothd's discovery until the kernel takes the scan's monitor again: \(error) "
                                  + "(a monitor it failed stays pending until \(adapter.name) is next switched off)")
                }
            }
        }
        // An active scan starts only while this radio's advertisement is on the adapter. The
        // kernel gives each active scan a new random address, unless the adapter advertises from
        // the random address it has: then it keeps that one (hci_set_random_addr_sync). When it
        // does set one and the controller refuses (legacy advertising on, an LE connection being
        // made, or against the specification, as the lab's emulator does after an extended set
        // is removed), it scans from the adapter's public address (hci_active_scan_sync), and
        // every scannable advertiser around hears that address in SCAN_REQs.
        // What the kernel said so far counts first: bluetoothd's start may have removed the
        // advertisement a moment ago (the random sequences cut it in after the data went in).
        // An unfit one is going: the kernel lends a legacy set to another program's next.
        if my.watching { management.deliverPending(withReports: true) }
        guard case .onAir(let advertisement) = my.advertisement, advertisement.adapter.name == adapter.name else {
            return waitForAdvertisement(on: adapter, "until the advertisement is on the air: an active scan without it could go out from the adapter's public address")
        }
        // After a power-on the kernel has no random address in force and sets one for the scan
        // even though the adapter advertises (hci_set_random_addr_sync): a controller making an
        // LE connection refuses it. The check is no lock (a connection can begin before the
        // kernel disables its background scan for the discovery, a few milliseconds on), but
        // while one is being made the scan waits for the next advertisement or scan cycle.
        if let controller = adapter.index, leConnectionBeingMade(controller) {
            return waitForAdvertisement(on: adapter, "while the kernel makes an LE connection: the controller could refuse the scan's random address, "
                                                     + "and the scan would go out from the adapter's public address")
        }
        guard let controller = adapter.index, my.watching else {
            try client.startDiscovery(on: adapter)
            enter(.active(adapter), because: "bluetoothd started its discovery (no management watch to hear the kernel's word)")
            return
        }
        my.scansUnpassed = DiscoveryStall.scansUnpassed(after: my.scansUnpassed, heardByKernel: my.heardByKernel, passedByBluetoothd: my.passedByBluetoothd)
        (my.heardByKernel, my.passedByBluetoothd) = (0, 0)
        if let stall = DiscoveryStall(scansUnpassed: my.scansUnpassed) {
            my.scansUnpassed = 0
            return try scanPassively(for: stall, on: adapter, controller: controller)
        }
        do {
            try client.startDiscovery(on: adapter)
        } catch {
            guard let stall = DiscoveryStall(call: "StartDiscovery", failure: error) else { throw error }
            return try scanPassively(for: stall, on: adapter, controller: controller)
        }
        enter(.discoveryStarting(adapter), because: "bluetoothd answered StartDiscovery")
        awaitDiscovery(on: controller)
        switch my.scan {
        case .discoveryStarting:
            if let stall = DiscoveryStall(kernelDiscovering: my.discoveries[controller] != nil) {
                return try scanPassively(for: stall, on: adapter, controller: controller)
            }
            enter(.active(adapter), because: "the kernel runs a discovery on \(adapter.name)")
            bluetoothdScans(on: adapter)
        case .active, .idle, .passive, .waitingForAdvertisement, .paused, .stopping:
            // It runs; or it ran, and the kernel ended it during the wait, and the agent heard so
            // (`discoveryEnded`): bluetoothd answered. An adapter blocked by rfkill as the discovery
            // began ended it so, and was taken for a stall (make test's lab, 2026-11-30 23:23).
            return
        }
    }

    /// bluetoothd's discovery runs in the kernel: one judged stalled works again.
    private func bluetoothdScans(on adapter: Adapter) {
        guard discoveryStalled else { return }
        bluetoothd.note(nil)
        logger.notice("bluetoothd's discovery on \(adapter.name) runs again: scanning through it")
    }

    /// Why bluetoothd's discovery does not scan: Debian 12's bluetoothd under a flood of new
    /// advertisers stopped reading the kernel's events (docs/radio.md, "A stalled discovery"), and
    /// then answered StartDiscovery without scanning ("filters were equal"), timed out
    /// StopDiscovery, and passed on no report. Each case is a judgement of one observation (pure).
    enum DiscoveryStall: Equatable, CustomStringConvertible {
        /// It answered StartDiscovery, and the kernel ran no discovery `discoveryProofSeconds` later.
        case kernelNotDiscovering
        /// A call of its discovery got no answer in time.
        case noAnswer(String, String)
        /// In `scans` scans in a row the kernel reported EN advertisements in its discovery, and
        /// bluetoothd passed none on.
        case reportsDropped(scans: Int)
        /// It refused StartDiscovery as in progress while it ran no discovery, and the kernel ran
        /// none to stop (`BlueZClient.startDiscovery`): it counts the agent as its discovery's
        /// client and does not scan for it. make test's RootCanal crowd (2026-11-30 13:41): after
        /// bluetoothd's restart and a stall, b's resumed radio was refused so for every scan, a
        /// minute without one.
        case refusedAsInProgress(String)

        /// After StartDiscovery and the wait for the kernel's Discovering: nil when it scans.
        init?(kernelDiscovering: Bool) {
            guard !kernelDiscovering else { return nil }
            self = .kernelNotDiscovering
        }

        /// A failure of `call` (StartDiscovery, StopDiscovery) that says bluetoothd does not answer,
        /// or a StartDiscovery refused as in progress (`refusedAsInProgress`); nil for any other
        /// refusal it made.
        init?(call: String, failure error: any Error) {
            guard let error = error as? DBusError else { return nil }
            if DiscoveryStall.unanswered.contains(error.name) {
                self = .noAnswer(call, error.description)
            } else if call == "StartDiscovery" && error.name == BlueZ.inProgressError {
                self = .refusedAsInProgress(error.description)
            } else {
                return nil
            }
        }

        /// As the next scan begins: nil unless in `unpassedScansInARow` scans in a row bluetoothd
        /// passed on none of the EN advertisements the kernel heard (one alone is no stall: in make
        /// test's lab a restarted bluetoothd in the loaded guest passed a scan's reports on after
        /// the scan had ended).
        init?(scansUnpassed: Int) {
            guard scansUnpassed >= DiscoveryStall.unpassedScansInARow else { return nil }
            self = .reportsDropped(scans: scansUnpassed)
        }

        /// The scans in a row without a report passed on, after one in which the kernel heard
        /// `heardByKernel` and bluetoothd passed on `passedByBluetoothd` (until the next began).
        static func scansUnpassed(after previous: Int, heardByKernel: Int, passedByBluetoothd: Int) -> Int {
            if passedByBluetoothd > 0 { return 0 }
            return heardByKernel >= leastHeard ? previous + 1 : previous
        }

        static let unanswered: Set<String> = [DBusError.noReply, "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut"]
        static let leastHeard = 3
        static let unpassedScansInARow = 2

        var description: String {
            switch self {
            case .kernelNotDiscovering:
                return "it answered StartDiscovery, and the kernel ran no discovery \(BlueZRadio.discoveryProofSeconds) s later"
            case .noAnswer(let call, let error): return "it did not answer \(call): \(error)"
            case .reportsDropped(let scans): return "in \(scans) scans in a row the kernel heard EN advertisements in its discovery, and bluetoothd passed none on"
            case .refusedAsInProgress(let error): return "it refused StartDiscovery as in progress, running no discovery: \(error)"
            }
        }
    }

    /// How long an active scan waits, at most, for the kernel's Discovering event once bluetoothd
    /// answered StartDiscovery (in the lab it came within milliseconds), in steps.
    static let discoveryProofSeconds = 2.0
    private static let discoveryProofSteps = 40

    /// Hands over the kernel's events until its Discovering makes `.discoveryStarting` active, or
    /// `discoveryProofSeconds` pass.
    private func awaitDiscovery(on controller: UInt16) {
        for _ in 0..<Self.discoveryProofSteps {
            management.deliverPending(withReports: true)
            guard case .discoveryStarting = my.scan else { return }
            pause(Self.discoveryProofSeconds / Double(Self.discoveryProofSteps))
        }
        management.deliverPending(withReports: true)
    }

    /// This scan, for a bluetoothd whose discovery does not scan (`stall`), is passive, through a
    /// kernel monitor. Its discovery, asked for or not, is withdrawn: while the agent is its
    /// client, bluetoothd starts it again by itself whenever the kernel ends it, also once the
    /// advertisement is off the air (make test's Debian 12 lab of 2026-11-29: a Discovering event
    /// missed, a discovery left to bluetoothd, and 10.24 s after the agent's pause bluetoothd's
    /// restart went out from hci1's public address).
    private func scanPassively(for stall: DiscoveryStall, on adapter: Adapter, controller: UInt16) throws {
        noteStall(stall, on: adapter)
        return try addMonitor(on: adapter, controller: controller)
    }

    /// bluetoothd's discovery does not scan: scans are passive, through a kernel monitor, until
    /// bluetoothd returns. Said once. The discovery on `adapter` is withdrawn each time, without
    /// waiting for an answer: a bluetoothd that reads its messages again starts by itself a
    /// discovery that still has the agent as its client, also one the kernel was made to stop (the
    /// RootCanal crowd beside make test's soak, 2026-11-30 07:24: 22 s after the stall, a 10.24 s
    /// active scan with the duplicate filter under the agent's passive scans, which then heard 95
    /// phones none of the times they were on the air).
    private func noteStall(_ stall: DiscoveryStall, on adapter: Adapter) {
        withdrawFromDiscovery(on: adapter)
        guard !discoveryStalled else { return }
        bluetoothd.note(BluetoothdCondition.Stall(owner: try? client.serviceOwner(), adapter: adapter))
        logger.warning("bluetoothd does not scan on \(adapter.name) (\(stall)): \(Self.whileStalled)")
    }

    /// What the radio does while bluetoothd's discovery is stalled, as the journal says it.
    private static let whileStalled = "scanning passively through a kernel advertisement monitor, and taking the adapter as the kernel has it, until bluetoothd restarts"

    /// Withdraws the agent from bluetoothd's discovery on `adapter`, without waiting for the answer.
    private func withdrawFromDiscovery(on adapter: Adapter) {
        do {
            try client.leaveDiscovery(on: adapter) { [self] in queue.async { [self] in withdrawalRead(on: adapter) } }
            my.withdrawalsUnread += 1
        } catch {
            logger.debug("cannot withdraw from bluetoothd's discovery on \(adapter.name): \(error)")
        }
    }

    /// bluetoothd answered a withdrawal (or left the bus): it no longer starts the discovery for
    /// the agent once it has read them all.
    private func withdrawalRead(on adapter: Adapter) {
        my.withdrawalsUnread -= 1
        guard my.withdrawalsUnread == 0, my.staleDiscoveriesStopped > 0 else { return }
        logger.info("bluetoothd read the agent's withdrawal from its discovery on \(adapter.name), after \(my.staleDiscoveriesStopped) "
                    + "of its discoveries were stopped for scans: a discovery during a scan is left alone again")
        my.staleDiscoveriesStopped = 0
    }

    /// A passive scan that begins while the kernel runs a discovery bluetoothd may still run for
    /// the agent (a withdrawal it has not read) stops that discovery first: the controller reports
    /// each advertiser once per discovery (its duplicate filter), so the phones that discovery
    /// reported before the scan began would not be reported in the scan. The RootCanal crowd beside
    /// a load (2026-11-30 07:34): bluetoothd, reading the kernel's events 6 s after the stall and
    /// its messages later still, started the agent's discovery again 0.77 s before a scan of
    /// agent a's, and a missed 95 phones on the air throughout it. bluetoothd starts a discovery
    /// with a filter again at once for a client it still has (src/adapter.c
    /// `start_discovery_timeout`, `no_scan_restart_delay`), with a fresh duplicate filter, which
    /// hides nothing from a scan that runs already. Another program's discovery is stopped so only
    /// while bluetoothd has not read the withdrawal, and bluetoothd starts it again too (one
    /// without a filter 5 s later). Under a crowd the kernel's Discovering event can be read after
    /// the scan began (make test of 2026-11-30 10:52: a discovery begun 0.85 s before agent a's scan
    /// ran through it, 90 phones hidden), so the first one heard during the scan is stopped too; one
    /// after it began during the scan, with a fresh filter, and is left alone (bluetoothd would
    /// start each again at once): a scan tries once. Returns whether it tried.
    private func stopStaleDiscovery(on adapter: Adapter, controller: UInt16) -> Bool {
        guard my.withdrawalsUnread > 0, my.discoveries[controller] != nil else { return false }
        do { try stopKernelDiscovery(on: controller) } catch {
            logger.debug("cannot stop the discovery on \(adapter.name) for the scan: \(error)")
            return true
        }
        my.staleDiscoveriesStopped += 1
        guard my.staleDiscoveriesStopped == 1 else { return true }
        logger.notice("bluetoothd runs a discovery on \(adapter.name) before it has read the agent's withdrawal from it: stopped through the kernel, "
                      + "once a scan, until it reads it, so that the scan hears every phone (the discovery reports each once)")
        return true
    }

    /// Stops the discovery the kernel runs on `controller`, of the address types it was started
    /// for; one the kernel ended already (Rejected) is as good.
    private func stopKernelDiscovery(on controller: UInt16) throws(ManagementError) {
        let addressTypes = my.discoveries[controller] ?? leAddressTypes
        do throws(ManagementError) { try management.send(StopDiscovery(addressTypes: addressTypes), controller: controller) } catch {
            guard error.status == Self.rejected else { throw error }
        }
    }

    /// A passive scan on `adapter`: a kernel advertisement monitor, for which the kernel scans
    /// passively, sending nothing (`discoveryStalled` too: the kernel's own active discovery
    /// went out from the adapter's public address in the lab).
    private func addMonitor(on adapter: Adapter, controller: UInt16) throws {
        try removeLeftoverMonitor(on: adapter)
        try checkPoweredForMonitor(adapter, controller: controller)
        // The kernel's word on a discovery begun just before the scan may still wait to be read.
        if my.withdrawalsUnread > 0 && my.watching { management.deliverPending(withReports: true) }
        let stoppedADiscovery = stopStaleDiscovery(on: adapter, controller: controller)
        // Looked at last, just before the monitor goes: rfkill marks the adapter blocked before the
        // kernel closes it (net/rfkill/core.c rfkill_set_block, then hci_rfkill_set_block), and a
        // close that finds the monitor's command queued frees it, which kernel 6.1 then uses: an
        // oops in hci_cmd_sync_work, after which Bluetooth is dead until a reboot (make test's
        // Debian 12 crowd, 2026-12-01 12:41, agent b's monitor during a stall, at the faults'
        // rfkill block). The moment between this look and the command is all that is left of it.
        if let kill = killSwitch(adapter.name) { throw Failure.blocked(adapter.name, kill) }
        // What the controller hears as the scan starts counts (an emulated one reports each
        // advertiser once, when the scan is enabled, before the reply): its Device Found
        // events are handled after this call, in the passive phase.
        let (handle, added) = try management.exchange(AddAdvertisementPatternsMonitor(patterns: [.exposureNotification]), controller: controller)
        enter(.passive(adapter, monitor: handle, added: added, stoppedADiscovery: stoppedADiscovery), because: "the kernel took its monitor")
        // Written only when it changes (the kernel hands out the lowest free handle, so
        // mostly the same one): a write per scan was 3 MB an hour on the SD card in the service lab.
        let note = AdapterNumber(adapter: adapter.name, number: handle)
        if my.monitorNote != .known(note) {
            try store.set(StoreSettings.scanMonitor, to: note)
            my.monitorNote = .known(note)
        }
    }

    /// A passive scan waits while bluetoothd may be setting an adapter up (at the radio's start and
    /// after bluetoothd returns), until it offers advertising on each, for at most
    /// `longestSetUpSeconds`; a bluetoothd long set up says so at the first ask. The kernel hands a
    /// monitor's reports to every management socket, and bluetoothd, which reads its own in order,
    /// could then queue no reply to its commands behind a crowd's (the write of one fails with
    /// ENOMEM). In make test's trixie crowd (CI of 2026-12-01, 13:33) agent a's scan began 3.5 s
    /// after bluetoothd's restart, while it set hci0 up: its Read Advertising Features failed so,
    /// and it offered no advertising on hci0 for the rest of the run. Only while bluetoothd
    /// answers: during a stall the passive scan is the only one.
    ///
    /// The wait is armed as bluetoothd leaves, not as its name is heard again: the name can come
    /// after the new bluetoothd answered a scan's first calls (make test's trixie crowd, 15:03:53:
    /// agent a's monitor went 0.35 s before the name reached the radio, 2.1 s before bluetoothd
    /// offered advertising on hci0).
    private func awaitBluetoothdsSetUp() throws {
        if case .done = my.setUp { return }
        guard let settingUp = adapterBeingSetUp() else {
            my.setUp = .done
            return
        }
        let now = uptime(), since: Double
        if case .underWay(let found) = my.setUp {
            since = found
        } else {
            (since, my.setUp) = (now, .underWay(since: now))
        }
        guard now - since >= Self.longestSetUpSeconds else { throw Postponed.bluetoothdSettingUp(settingUp) }
        my.setUp = .done
        logger.notice("bluetoothd has offered no advertising on \(settingUp) for \(Int(Self.longestSetUpSeconds)) s: scanning passively all the same")
    }

    /// The first LE controller of the kernel's on which bluetoothd does not offer advertising, by
    /// name; nil when it offers it on each. Every controller, not only the radio's: the reports of
    /// a monitor on one reach bluetoothd's socket while it sets up another. A controller the kernel
    /// or bluetoothd does not answer for is passed over (bluetoothd's silence is the stall's to judge).
    private func adapterBeingSetUp() -> String? {
        guard let controllers = try? management.send(ReadControllerIndexList(), controller: ReadControllerIndexList.noController) else { return nil }
        for controller in controllers {
            guard (try? management.send(ReadControllerInformation(), controller: controller).supported.contains(.le)) == true else { continue }
            let name = "hci\(controller)"
            if (try? handingOverEvents({ [client] in try client.offersAdvertising(onAdapterNamed: name) })) == false { return name }
        }
        return nil
    }

    /// How long a passive scan waits for bluetoothd to set the adapter up: three times the longest
    /// start the labs saw (`unansweredCallsBeforeTheKernelsAdapter`).
    static let longestSetUpSeconds = 30.0

    /// Notes an active scan on `adapter` that waits (`why`), for the next advertisement to start it.
    private func waitForAdvertisement(on adapter: Adapter, _ why: String) {
        enter(.waitingForAdvertisement(adapter), because: why)
    }

    /// Starts the active scan that waited for the advertisement now on `adapter`.
    private func startWaitingScan(on adapter: Adapter) {
        guard my.scan.waitsForAdvertisement, my.scan.adapter?.name == adapter.name else { return }
        resumeScan(on: adapter, ran: false)
    }

    /// bluetoothd's Powered follows the kernel's by a moment: a monitor sent to a controller the
    /// kernel has just switched off is failed, and the kernel then refuses every later one until
    /// the adapter next goes off (`startScan`). The kernel's own settings, read just before,
    /// leave only the moment between this read and the monitor for that (the kernel reports the
    /// adapter off before it marks the controller down, in hci_dev_close_sync).
    private func checkPoweredForMonitor(_ adapter: Adapter, controller: UInt16) throws {
        guard try !management.send(ReadControllerInformation(), controller: controller).current.contains(.powered) else { return }
        if let kill = killSwitch(adapter.name) { throw Failure.blocked(adapter.name, kill) }
        throw Failure.poweredOff(adapter.name)
    }

    /// Removes the monitor a run that was killed left on `adapter`, once per process: the kernel
    /// would scan for it for good. The note stays after a clean stop (one write fewer per scan);
    /// bluetoothd removes every monitor when it starts, and a clean stop removes its own, so a
    /// handle the kernel lists is a leftover, unless a program of the management interface took
    /// it since (bluetoothd 5.66 offers monitors to no client outside experimental mode).
    private func removeLeftoverMonitor(on adapter: Adapter) throws {
        guard let controller = adapter.index, case .unread = my.monitorNote else { return }
        let note = try remembered(StoreSettings.scanMonitor)
        if let note, note.adapter == adapter.name, note.number != 0,
           try management.send(ReadAdvertisementMonitorFeatures(), controller: controller).contains(note.number) {
            try removeMonitor(note.number, controller: controller)
            logger.info("removed the scan monitor a run that stopped unexpectedly left on \(adapter.name)")
        }
        // Only once it is known gone: a failure (the adapter going off) tries again next time.
        my.monitorNote = .known(note)
    }

    /// Removes a monitor; one gone already (bluetoothd's start removes them all) is as good.
    private func removeMonitor(_ handle: UInt16, controller: UInt16) throws(ManagementError) {
        do throws(ManagementError) { try management.send(RemoveAdvertisementMonitor(handle: handle), controller: controller) } catch {
            guard Self.alreadyGone(error) else { throw error }
        }
    }

    /// Stops what `scan` left running in the kernel or bluetoothd.
    private func stopScan(_ scan: ScanPhase) throws {
        switch scan {
        case .idle, .waitingForAdvertisement, .paused, .stopping: return
        case .active(let adapter), .discoveryStarting(let adapter):
            // bluetoothd that does not answer is not asked again (10 s each): the kernel stops what it runs.
            if discoveryStalled, let controller = adapter.index {
                if my.discoveries[controller] != nil { try stopKernelDiscovery(on: controller) }
                return
            }
            do { try client.stopDiscovery(on: adapter) } catch {
                guard let stall = DiscoveryStall(call: "StopDiscovery", failure: error), let controller = adapter.index else { throw error }
                noteStall(stall, on: adapter)
                // What the kernel runs of it ends through the kernel.
                if my.discoveries[controller] != nil { try stopKernelDiscovery(on: controller) }
            }
        case .passive(let adapter, let monitor, _, _): if let controller = adapter.index { try removeMonitor(monitor, controller: controller) }
        }
    }

    /// Ends what the scan runs in the kernel as bluetoothd leaves, so that a starting
    /// bluetoothd finds its management socket empty. The kernel sends every Device Found to every
    /// management socket, and bluetoothd 5.66 gives up the adapters for good when its first
    /// command's reply cannot be queued behind them: in the RootCanal crowd (2026-11-30 12:28)
    /// bluetoothd, restarted 0.5 s after a SIGKILL while both agents scanned passively, read
    /// 32,758 of the monitors' reports, logged "Failed to read version information" (its write
    /// failed with ENOMEM: the socket's receive queue was full) and offered no adapter for the
    /// rest of the run. A discovery bluetoothd left behind goes too: the kernel runs it without
    /// it. The agent scans again once bluetoothd offers the adapter (`radioReturned`).
    private func endKernelScan(because reason: String) {
        let scan = my.scan
        switch scan {
        case .passive(let adapter, _, _, _), .active(let adapter), .discoveryStarting(let adapter):
            enter(.idle, because: reason)
            guard let controller = adapter.index else { return }
            do {
                if case .passive(_, let monitor, _, _) = scan { try removeMonitor(monitor, controller: controller) }
                if my.discoveries[controller] != nil { try stopKernelDiscovery(on: controller) }
            } catch {
                logger.debug("cannot end the scan on \(adapter.name) as \(reason): \(error)")
            }
        case .idle, .waitingForAdvertisement, .paused, .stopping:
            break
        }
    }

    /// Forgets the devices seen also when the scan would not stop, so that the next scan
    /// reports them again; throws the first failure.
    ///
    /// The reports the kernel queued until its scan stopped are the scan's, handed to the agent
    /// before the call returns, while the agent's record of the scan is open: under the RootCanal
    /// crowd (make test, 2026-12-01 08:20, and a run at 08:27) a stalled bluetoothd left
    /// StopDiscovery unanswered for 10 s while the kernel scanned on, and the scan, ended before
    /// the call, dropped the 26 and 61 phones the controller reported meanwhile.
    public func stopScanning() throws {
        let scan = my.scan
        guard let adapter = scan.adapter else { return }
        switch scan {
        case .passive, .active, .discoveryStarting: enter(.stopping(adapter), because: "the agent ends it")
        case .idle, .waitingForAdvertisement, .paused, .stopping: enter(.idle, because: "the agent ends it")
        }
        var failure: (any Error)?
        do { try stopScan(scan) } catch { failure = error }
        if case .stopping = my.scan {
            if my.watching { management.deliverPending(withReports: true) }
            enter(.idle, because: "its stop returned")
        }
        if let controller = adapter.index, case let dropped = management.takeDroppedReports(controller: controller), dropped > 0 {
            logger.warning("\(dropped) advertisement reports of \(adapter.name) came faster than enagentd took them and were dropped during the scan")
        }
        try client.forgetDevices(on: adapter)
        if let failure { throw failure }
    }

    /// How the radio scans (passively until the kernel refused a monitor), for the log and the status.
    public var scanMode: ScanMode { my.scanMode }

    /// Whether the scan is bluetoothd's discovery.
    private var scansThroughDiscovery: Bool { my.scanMode == .active || my.monitorRefused }

    /// Whether the scan's sightings are bluetoothd's reports: only without the management watch.
    /// With it they are the kernel's Device Found events on either scan (bluetoothd's discovery
    /// brings them to every management socket), read by one parser (`AdvertisingData`), so that an
    /// advertisement gives the same sighting however the radio scans; bluetoothd's reports are then
    /// only counted, to judge its discovery (`DiscoveryStall`). One source: nothing counts twice.
    private var sightingsFromBluetoothd: Bool { !my.watching }

    /// An active scan is ended and started anew before the kernel's LE discovery timeout
    /// (DISCOV_LE_TIMEOUT, 10.24 s): at that timeout bluetoothd restarts a filtered discovery at
    /// once (src/adapter.c `discovering_callback`), whether the advertisement is on the air or not.
    /// The margin covers a late timer and the D-Bus round trips through a busy bluetoothd: in the
    /// lab's emulated guest a piece of 9 s ended after 10.19 s (docs/radio.md, "The scan").
    public static let longestActiveScanSeconds = 8.0

    public var longestScanSeconds: Double? { scansThroughDiscovery ? Self.longestActiveScanSeconds : nil }

    /// The adapter in use (for reports and the status), when one is known: the one configured by
    /// name, else the advertisement's or the scan's, else the one found last (while bluetoothd is
    /// away, say); its address once BlueZ or the kernel has given it.
    private var adapterInUse: AdapterIdentity? {
        let configuredName: String?
        if case .name(let name)? = configuredAdapter { configuredName = name } else { configuredName = nil }
        guard let name = configuredName ?? my.advertisement.advertisement?.adapter.name ?? my.scan.adapter?.name ?? my.lastFound?.name else { return nil }
        return AdapterIdentity(name: name, address: my.lastFound?.name == name ? my.lastFound?.address : nil)
    }

    /// The TX power `adapter`'s controller advertises at, for the metadata: the level it
    /// `selected` for the advertisement, or, when it does not say (127: a BT 4.x controller, a
    /// Raspberry Pi's; RootCanal), its advertising channel's, asked once a run and at each
    /// advertisement until it answers; nil until then (the metadata carries the configured
    /// power). Asked once at the start, an unanswered question left the configured power in the
    /// metadata for the whole run: agent a, restarted among the RootCanal crowd (CI, 2026-11-30
    /// 22:35), got no answer within the second and sent -4 dBm for 18 rotations where its
    /// controller advertised at -10 dBm. The log says each new level and where it came from.
    private func transmitPower(selected: Int8, by adapter: Adapter) -> Int8? {
        let level: Int8, source: String
        if selected != 127 {
            (level, source) = (selected, "selected by \(adapter.name)")
        } else if let known = my.channelPower, known.adapter == adapter.name, let read = known.level {
            (level, source) = (read, "read from \(adapter.name)")
        } else {
            do {
                (level, source) = (try channelTransmitPower(adapter.name), "read from \(adapter.name)")
                my.channelPower = (adapter.name, level)
            } catch {
                if my.channelPower?.adapter != adapter.name {
                    logger.info("\(error); the metadata carries the configured TX power until \(adapter.name) tells its own")
                }
                my.channelPower = (adapter.name, nil)
                return nil
            }
        }
        if my.saidPower?.adapter != adapter.name || my.saidPower?.level != level {
            logger.info("advertising TX power \(level) dBm, \(source)")
            my.saidPower = (adapter.name, level)
        }
        return level
    }

    /// The kernel's events, on the radio's queue between its calls (`handle`). Without the watch
    /// (no management socket) the next rotation finds a connectable adapter, and the scan is
    /// bluetoothd's discovery, its sightings bluetoothd's reports.
    public func watchManagement(for agent: any RadioListener, logger: Logger) -> (any ManagementWatch)? {
        my.listener.agent = agent
        do {
            let watch = try management.watchEvents(on: queue) { [self] event, read in handle(event, read: read) }
            my.watching = true
            return watch
        } catch {
            my.scanMode = .active
            logger.warning("scanning actively through bluetoothd's discovery, and an adapter turned connectable is noticed at the next rotation only: \(error)")
            return nil
        }
    }

    /// The radio's run ends (a pause, enagentd's stop), after the agent's last call: a discovery
    /// the kernel runs on the adapter of a stalled bluetoothd goes, through the kernel, now or, when
    /// none runs yet, the first to start within the returned time, for which the run's watch stays
    /// (nil: no stall noted, the watch may go now). Catching up, a stalled bluetoothd ran the
    /// discovery the agent had withdrawn from, and then forgot it: it started none again when the
    /// kernel's timeout ended it (the RootCanal crowds of make test, 2026-12-01: agent b paused
    /// 1.5 s after bluetoothd started it at 03:56, 30 ms before at 02:19, and each time hci1
    /// scanned actively 10 s into the pause). One is stopped, not each: bluetoothd starts a
    /// discovery again at once for a client it still has, which the agent would only fight.
    /// Another program's discovery on that adapter goes too; bluetoothd starts its own clients' again.
    public func endRun() -> DispatchTimeInterval? {
        if my.watching { management.deliverPending(withReports: false) }
        guard let adapter = bluetoothd.stalled?.adapter, let controller = adapter.index else { return nil }
        guard my.discoveries[controller] != nil else {
            guard my.watching else { return nil }
            my.lateDiscoveryOn = controller
            return Self.lateDiscoveryWatch
        }
        stopDiscovery(on: controller, of: adapter, because: "as the agent's run ends")
        return nil
    }

    /// How long the watch of a run that ended on a stall waits for bluetoothd to start a discovery
    /// it was asked for before the stall: the kernel's own timeout of one (10.24 s) is as long as
    /// such a discovery would scan anyway.
    public static let lateDiscoveryWatch = DispatchTimeInterval.seconds(10)

    private func stopDiscovery(on controller: UInt16, of adapter: Adapter, because when: String) {
        do throws(ManagementError) {
            try stopKernelDiscovery(on: controller)
            logger.info("stopped the discovery the kernel ran on \(adapter.name) for the stalled bluetoothd, \(when)")
        } catch {
            logger.debug("cannot stop the discovery on \(adapter.name) \(when): \(error)")
        }
    }

    /// One event of the kernel's, read as packet `read`: the adapter advertising turned connectable
    /// (the kernel then re-programs the advertisement on the air, see `advertise`, so the agent takes
    /// it off without waiting for its next rotation), another program's advertisement added beside
    /// this radio's on a legacy controller, the advertisements a passive scan hears, this radio's
    /// advertisement or monitor removed by another program (bluetoothd's start removes them all) or
    /// by the kernel. Each is judged by the controller it names: another's change nothing here.
    private func handle(_ event: ManagementEvent, read: PacketNumber) {
        switch event {
        case .newSettings(let controller, let settings):
            guard settings.contains(.connectable) else { return }
            makeUnfit(on: controller, Failure.connectable, read: read, because: "hci\(controller) turned connectable")
        case .advertisingAdded(let controller, let instance):
            // Another program's: the kernel tells every socket but the adder's (mgmt.c:
            // add_advertising, add_ext_adv_data), and this radio's commands go out on the watch's.
            guard let own = my.advertisement.advertisement, own.adapter.index == controller, own.legacy, own.instance != instance else { return }
            makeUnfit(on: controller, Failure.shared, read: read, because: "another program added an advertisement to hci\(controller), a BT 4.x adapter")
        case .deviceFound(let controller, let found):
            // Also those read before a pause for an advertisement's address, handled during it. In
            // an active scan the kernel holds a scannable advertisement's report until its scan
            // response and sends both in one event, the advertising data first (hci_event.c
            // process_adv_report, which cuts each at its first malformed structure; mgmt.c
            // mgmt_device_found appends the scan response), as bluetoothd gets it too.
            guard let adapter = my.scan.adapter, adapter.index == controller,
                  let serviceData = AdvertisingData.exposureNotificationServiceData(in: found.data) else { return }
            // What bluetoothd passes on of it is counted against this, to see that its discovery works.
            let (rssis, data, address) = (found.rssis, Array(serviceData), adapterInUse?.address)
            if case .active = my.scan { my.heardByKernel += rssis.count }
            for rssi in rssis {
                my.listener.agent?.report(RadioReport(serviceData: data, rssi: Int16(rssi), adapter: adapter.name, adapterAddress: address))
            }
        case .advertisingRemoved(let controller, let instance):
            // By another program (bluetoothd's start) or the kernel itself (sk NULL: the
            // controller ended the set, hci_le_ext_adv_term_evt; power-off, hci_power_off_sync):
            // the kernel tells every socket but the remover's (hci_remove_adv_sync,
            // hci_cc_le_remove_adv_set, add_adv_complete), so never of this radio's own removals.
            // Not while adding: every event read before the parameters' reply is handled then, so a
            // removal of the same number then was of the instance before (or of the new one, whose
            // data the kernel then refuses).
            guard let own = my.advertisement.onAir, own.adapter.index == controller, own.instance == instance else { return }
            enter(.none, because: "another program or the kernel removed it")
            my.listener.agent?.advertisementRemoved()
        case .monitorRemoved(let controller, let handle):
            // Handle 0 is every monitor: bluetoothd removes them so as it starts (src/adapter.c,
            // reset_adv_monitors), and the kernel's one event carries the command's handle
            // (mgmt_remove_adv_monitor_complete). The kernel tells every socket but the remover's,
            // so this radio never hears of its own removals; one read before the reply that
            // added this scan's monitor was of the monitor before.
            guard case .passive(let adapter, let monitor, let added, _) = my.scan, adapter.index == controller, handle == 0 || handle == monitor,
                  read > added else { return }
            enter(.idle, because: "another program removed its monitor (bluetoothd's start removes them all)")
            logger.notice("the scan's monitor on hci\(controller) was removed by another program (bluetoothd's start removes them all); scanning anew")
            my.listener.agent?.scanStopped()
        case .discovering(let controller, let addressTypes, let active):
            my.discoveries[controller] = active ? addressTypes : nil
            if active, my.lateDiscoveryOn == controller, let adapter = bluetoothd.stalled?.adapter, adapter.index == controller {
                my.lateDiscoveryOn = nil
                return stopDiscovery(on: controller, of: adapter, because: "after the agent's run ended")
            }
            switch my.scan {
            case .discoveryStarting(let adapter) where adapter.index == controller && active:
                enter(.active(adapter), because: "the kernel's discovery on hci\(controller) runs")
                bluetoothdScans(on: adapter)
            case .active(let adapter) where adapter.index == controller && !active:
                discoveryEnded(on: adapter)
            case .passive(let adapter, let monitor, let added, stoppedADiscovery: false) where adapter.index == controller && active:
                if stopStaleDiscovery(on: adapter, controller: controller) {
                    enter(.passive(adapter, monitor: monitor, added: added, stoppedADiscovery: true), because: "the scan stopped a discovery it heard of")
                }
            case .idle, .passive, .active, .discoveryStarting, .waitingForAdvertisement, .paused, .stopping:
                break
            }
        }
    }

    /// The kernel ended the discovery of this radio's scan on `adapter` (its timeout, a power-off)
    /// or another program stopped it: the agent scans anew.
    private func discoveryEnded(on adapter: Adapter) {
        enter(.idle, because: "the kernel's discovery on \(adapter.name) ended without the agent")
        my.listener.agent?.scanStopped()
    }

    /// This radio's advertisement on `controller` is unfit (`failure`): one on the air the agent
    /// takes off, told now; one being added `advertise` withdraws before its data goes out, unless
    /// the event was `read` before what it read of the adapter, which saw it already.
    private func makeUnfit(on controller: UInt16, _ failure: (String) -> Failure, read: PacketNumber, because reason: String) {
        switch my.advertisement {
        case .onAir(let own) where own.adapter.index == controller:
            let unfit = failure(own.adapter.name)
            enter(.unfit(own, unfit), because: reason)
            if case .connectable = unfit {
                // The kernel sends it in connectable PDUs already: off now, not at the agent's turn,
                // which waits behind the rest of the reports handed over with this event (153 ms
                // in the RootCanal crowd, 2026-12-01). The agent then finds nothing to take off.
                do { try stopAdvertising() } catch {
                    logger.error("cannot take the advertisement off the connectable \(own.adapter.name), so its identifier may still go out: \(error)")
                }
            }
            my.listener.agent?.adapterUnfitForAdvertising(unfit.problem, because: reason)
        case .adding(let own, let since) where own.adapter.index == controller && read > since:
            enter(.unfit(own, failure(own.adapter.name)), because: reason)
        case .none, .replacing, .adding, .onAir, .unfit:
            break
        }
    }

    /// The advertisement's only way to a new phase; logs the change. On the air, nothing is wrong;
    /// unfit, the failure is what is wrong until the next advertisement.
    private func enter(_ phase: AdvertisementPhase, because reason: String) {
        logger.debug("advertisement: \(my.advertisement) → \(phase): \(reason)")
        publishing {
            my.advertisement = phase
            switch phase {
            case .onAir: my.advertisingProblem = nil
            case .unfit(_, let failure): my.advertisingProblem = failure.problem
            case .none, .replacing, .adding: break
            }
        }
    }

    /// The scan's only way to a new phase; logs the change, a wait for the advertisement at info.
    private func enter(_ phase: ScanPhase, because reason: String) {
        if case .waitingForAdvertisement(let adapter) = phase {
            logger.info("the scan on \(adapter.name) waits \(reason)")
        } else {
            logger.debug("scan: \(my.scan) → \(phase): \(reason)")
        }
        publishing { my.scan = phase }
    }

    /// What the radio does, as the agent and the status read it: its phases, why it has no
    /// advertisement, and the adapter in use.
    public var activity: RadioActivity {
        RadioActivity(advertisement: my.advertisement.shown, advertisingProblem: my.advertisingProblem, scan: my.scan.shown, scanProblem: my.scanProblem,
                      adapter: adapterInUse)
    }

    /// The radio went away (bluetoothd, or its adapter): what it had on the air went with it.
    private func lost(telling agent: any RadioListener) {
        publishing { my.advertisingProblem = .bluetoothOff }
        agent.radioLost()
    }

    /// Makes `change` and tells the agent when it changed the activity: the radio's one publication.
    private func publishing(_ change: () -> Void) {
        let before = activity
        change()
        if activity != before { my.listener.agent?.radioChanged() }
    }

    /// Passes `agent` what this radio's adapter hears, and follows bluetoothd and the adapters so
    /// that the radio comes back by itself after either goes away. bluetoothd's signals arrive on
    /// the bus's thread and are judged on the radio's queue.
    public func follow(for agent: any RadioListener, logger: Logger) throws -> [SignalSubscription] {
        try client.followDevices { [self] report in
            queue.async { [self] in
                guard let adapter = adapterInUse, report.adapter == adapter.name else { return }
                guard sightingsFromBluetoothd else {
                    my.passedByBluetoothd += 1
                    return
                }
                agent.report(RadioReport(serviceData: report.serviceData, rssi: report.rssi, adapter: report.adapter, adapterAddress: adapter.address))
            }
        } + client.followService { [self] owner in
            queue.async { [self] in
                let present = owner != nil
                my.bluetoothdSettled = false
                my.setUp = .toBeLookedAt
                my.unansweredSinceStart = 0
                // Not as bluetoothd starts: its name may be heard late, after a scan through it began
                // (make test's crowd of 14:16: an active scan of the new bluetoothd's ended so 9 s on).
                if !present { endKernelScan(because: "bluetoothd left the bus") }
                // Nor a stall of this very bluetoothd, noted before its name was heard: its first
                // answer late, the crowd's new bluetoothd stalled at once (make test's trixie crowd,
                // 2026-11-30 23:36:03, its name heard a second later); the stall went, from the store
                // too, and agent a, SIGKILLed 16 s on, asked it anew, three calls of 10 s each.
                if discoveryStalled, owner == nil || bluetoothd.stalled?.owner != owner {
                    bluetoothd.note(nil)
                    logger.notice(present ? "bluetoothd returned: scanning through its discovery again"
                                          : "bluetoothd left the bus: scanning through its discovery again once it returns")
                }
                if present {
                    agent.radioReturned()
                } else {
                    logger.warning("bluetoothd left the bus; waiting for it to return")
                    lost(telling: agent)
                }
            }
        } + client.followAdapters { [self] change in
            queue.async { [self] in
                guard concerns(change) else { return }
                // bluetoothd offered the adapter since it started: a call it leaves unanswered from
                // now on is a stall, not its start-up. The RootCanal crowd of 2026-11-30 16:06
                // (bluetoothd 5.66): a restarted bluetoothd offered hci0 5 s after its start and then left
                // three calls unanswered, and agent a advertised again only after them, 45 s on.
                if change.kind == .appeared { my.bluetoothdSettled = true }
                // The adapter gone or switched off took the advertisement with it; the recovery switches
                // it on again where allowed, or retries every second until it is back.
                if !change.available { lost(telling: agent) }
                agent.radioReturned()
            }
        }
    }

    /// Whether an adapter's coming or going concerns this radio. Its own adapter's does; another's
    /// going away or off never does: another program power-cycles its own adapter to roll its
    /// address, and each loss brings this radio a fresh key mid-day, three of which spend the day's
    /// keys. Another adapter's return does while this radio has none yet, or follows one by its
    /// address, which a replug may bring back under another name.
    private func concerns(_ change: AdapterChange) -> Bool {
        let own: String?
        if case .name(let name)? = configuredAdapter { own = name } else { own = my.chosenAdapter }
        if change.adapter == own { return true }
        guard change.available else { return false }
        if case .address? = configuredAdapter { return own == nil || change.kind == .appeared }
        return own == nil
    }
}
