import Dispatch
import ENAgent
@testable import ENBlueZ
import ENBus
import ENCore
import Synchronization

/// bluetoothd's adapter objects over `KernelModel`'s controller: hci0 while bluetoothd runs and
/// the controller is present; powering it on fails while rfkill blocks it (bluetoothd answers
/// only org.bluez.Error.Failed); its discovery is a scan on the controller.
final class BluetoothdModel: BlueZAdapters {
    let kernel: KernelModel
    private let running = Mutex(true)
    private let discovering = Mutex(false)

    init(kernel: KernelModel) {
        self.kernel = kernel
        kernel.whenTheRadioStopsADiscovery { [weak self] in self?.restartsItsDiscovery() }
    }

    var isRunning: Bool {
        get { running.withLock { $0 } }
        set { running.withLock { $0 = newValue } }
    }

    var isDiscovering: Bool { discovering.withLock { $0 } }

    /// Debian 12's bluetoothd under a flood of new advertisers (the lab's flood, issue 56): it
    /// stopped reading the kernel's events, so the kernel's discovery ended without it and it
    /// believes its own runs on. From then on it answers StartDiscovery without scanning ("filters
    /// were equal, deciding to not restart the scan", or InProgress, which BlueZClient takes as
    /// running since its Discovering says so), StopDiscovery not at all (NoReply after 10 s), and
    /// passes on no report. Until it restarts. `silent`: it answers no call at all (the lab's
    /// flood of 2026-11-29: every Get of the adapter's properties timed out too).
    private let stalled = Mutex(false)
    private let silent = Mutex(false)
    var isStalled: Bool { stalled.withLock { $0 } }

    func stall(silent: Bool = false) {
        stopsReading(silent: silent)
        kernel.setScanning(false)
    }

    private func stopsReading(silent: Bool = false) {
        stalled.withLock { $0 = true }
        self.silent.withLock { $0 = silent }
        unreadLeaves.withLock { $0 = $0 ?? [] }
    }

    /// It stalls at the next StopDiscovery, which it leaves unanswered (NoReply after 10 s) while
    /// the kernel's discovery runs on and the controller reports what happens `meanwhile` (the
    /// RootCanal crowd, 2026-12-01 08:27: 10 s of a crowd's reports).
    func stallsAtTheNextStop(meanwhile: @escaping @Sendable () -> Void) { stallAtStop.withLock { $0 = meanwhile } }
    private let stallAtStop = Mutex<(@Sendable () -> Void)?>(nil)

    private func answering() throws {
        guard !isStalled else { throw DBusError(name: DBusError.noReply, message: "Did not receive a reply.") }
    }

    /// Discoveries (active scans) started while no EN advertisement was on the air: the kernel sets
    /// a new random address for each of those, and scans from the public address when the
    /// controller refuses it (`hci_active_scan_sync`).
    private let unshielded = Mutex(0)
    var scansStartedWithoutAdvertisement: Int { unshielded.withLock { $0 } }
    /// Discoveries started while the kernel made an LE connection: after a power-on the kernel sets
    /// a random address for the scan although the adapter advertises, which an initiating
    /// controller refuses.
    private let whileConnecting = Mutex(0)
    var scansStartedWhileConnecting: Int { whileConnecting.withLock { $0 } }

    /// Its answers wait until `answers` (a busy bluetoothd, reading its messages late).
    private let answersHeld = Mutex<DispatchSemaphore?>(nil)
    func holdsAnswers() { answersHeld.withLock { $0 = DispatchSemaphore(value: 0) } }
    func answers() { answersHeld.withLock { held in defer { held = nil }; return held }?.signal() }

    /// The radio's calls so far (each ends in `available`).
    private let callCount = Mutex(0)
    var calls: Int { callCount.withLock { $0 } }

    private func available() throws {
        callCount.withLock { $0 += 1 }
        if let held = answersHeld.withLock({ $0 }) {
            held.wait()
            held.signal()
        }
        guard isRunning else { throw DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "The name org.bluez was not provided") }
        guard !silent.withLock({ $0 }) else { throw DBusError(name: DBusError.noReply, message: "Did not receive a reply.") }
    }

    private var hci0: Adapter {
        Adapter(path: "/org/bluez/hci0", address: "00:1A:7D:DA:71:13", powered: kernel.snapshot.powered, canAdvertise: true)
    }

    func adapters() throws -> [Adapter] {
        try available()
        return kernel.snapshot.present ? [hci0] : []
    }

    func adapter(named name: String) throws -> Adapter? {
        try adapters().first { $0.name == name }
    }

    /// The adapters this run has not offered advertising on yet: none, unless it started setting
    /// hci0 up slowly (`starts(settingUpSlowly:)`) or sets another up (`setsUp`), until `offersAdvertising`.
    private let beingSetUp = Mutex<Set<String>>([])
    func offersAdvertising(onAdapterNamed name: String) throws -> Bool {
        try available()
        return (name != "hci0" || kernel.snapshot.present) && !beingSetUp.withLock { $0.contains(name) }
    }

    func setsUp(_ adapter: String) { beingSetUp.withLock { _ = $0.insert(adapter) } }
    func offersAdvertising(on adapter: String = "hci0") { beingSetUp.withLock { _ = $0.remove(adapter) } }

    func setPowered(_ adapter: Adapter, _ powered: Bool) throws {
        try available()
        guard !kernel.snapshot.blocked else { throw DBusError(name: "org.bluez.Error.Failed", message: "Failed") }
        if powered { kernel.powerOn() } else { kernel.powerOff() }
    }

    /// bluetoothd counts the agent as its discovery's client and runs no discovery: StartDiscovery
    /// is refused as in progress, as BlueZClient passes it on once the kernel had none to stop.
    let refusesAsInProgress = Mutex(false)
    func startDiscovery(on adapter: Adapter) throws {
        try available()
        if refusesAsInProgress.withLock({ $0 }) {
            throw DBusError(name: BlueZ.inProgressError, message: "Operation already in progress: the kernel still runs the discovery of a bluetoothd "
                                                                  + "that stopped, and would not stop it: hci0 refused Stop Discovery: Rejected (management status 0xb)")
        }
        guard !isStalled else {
            discovering.withLock { $0 = true }
            return
        }
        guard kernel.snapshot.powered else { throw DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready") }
        discovering.withLock { $0 = true }
        startKernelDiscovery()
        discoveryStarted.withLock { started in defer { started = nil }; return started }?()
    }

    /// What happens once, just after the kernel's discovery next starts, before bluetoothd answers.
    func onceTheDiscoveryStarts(_ happen: @escaping @Sendable () -> Void) { discoveryStarted.withLock { $0 = happen } }
    private let discoveryStarted = Mutex<(@Sendable () -> Void)?>(nil)

    /// The kernel's active scan, with no check of what is on the air.
    private func startKernelDiscovery() {
        let controller = kernel.snapshot
        if !controller.onAir.values.contains(where: { KernelModel.isExposureNotification($0.data) }) { unshielded.withLock { $0 += 1 } }
        if controller.connecting { whileConnecting.withLock { $0 += 1 } }
        kernel.setScanning(true)
    }

    /// The kernel ends the discovery at its LE timeout (10.24 s), and bluetoothd, while it has a
    /// client, starts it again at once by itself (src/adapter.c `discovering_callback`).
    func discoveryTimesOut() {
        kernel.setScanning(false)
        restartsItsDiscovery()
    }

    /// The kernel ended the discovery (its timeout, or another program through the kernel):
    /// bluetoothd, reading the kernel's events, starts a discovery with a filter (the agent's
    /// has one) again at once while it has a client (`discovering_callback`, `no_scan_restart_delay`).
    private func restartsItsDiscovery() {
        guard discovering.withLock({ $0 }), isRunning, !isStalled, kernel.snapshot.powered, !kernel.snapshot.scanning else { return }
        startKernelDiscovery()
    }

    func stopDiscovery(on adapter: Adapter) throws {
        try available()
        if let meanwhile = stallAtStop.withLock({ stall in defer { stall = nil }; return stall }) {
            stopsReading()
            meanwhile()
        }
        try answering()
        guard discovering.withLock({ $0 }) else { throw DBusError(name: "org.bluez.Error.Failed", message: "No discovery started") }
        discovering.withLock { $0 = false }
        kernel.setScanning(false)
    }

    /// StopDiscovery without waiting for the answer: a stalled bluetoothd reads it only once it
    /// reads its messages again (`readsItsMessages`), and answers a client it does not have with an
    /// error; `read` runs when it answers, or when it leaves the bus (the bus answers then).
    func leaveDiscovery(on adapter: Adapter, whenRead read: @escaping @Sendable () -> Void) throws {
        guard isRunning else { return read() }
        let queued = unreadLeaves.withLock { unread in
            unread?.append(read)
            return unread != nil
        }
        guard !queued else { return }
        endsTheClientsDiscovery()
        read()
    }

    private func endsTheClientsDiscovery() {
        guard discovering.withLock({ $0 }) else { return }
        discovering.withLock { $0 = false }
        kernel.setScanning(false)
    }

    /// StopDiscovery calls sent without waiting since it stalled, unread; nil while it reads its messages.
    private let unreadLeaves = Mutex<[@Sendable () -> Void]?>(nil)

    /// A stalled bluetoothd reads its messages again, in order, without a restart: the StopDiscovery
    /// calls it had not read end its discovery, and it answers them.
    func readsItsMessages() {
        silent.withLock { $0 = false }
        guard let unread = unreadLeaves.withLock({ unread in defer { unread = nil }; return unread }) else { return }
        if !unread.isEmpty { endsTheClientsDiscovery() }
        unread.forEach { $0() }
    }

    /// A stalled bluetoothd reads the kernel's events again: a discovery that still has its client,
    /// and that the kernel no longer runs, it starts again by itself (src/adapter.c
    /// `discovering_callback`). The RootCanal crowd beside a load (2026-11-30 07:34): 6 s after
    /// the stall, before it read the agent's withdrawal.
    func readsTheKernelAgain() {
        stalled.withLock { $0 = false }
        restartsItsDiscovery()
    }

    /// Both, its messages first (the RootCanal crowd beside make test's soak, 2026-11-30 07:24:
    /// 22 s after the stall).
    func catchesUp() {
        readsItsMessages()
        readsTheKernelAgain()
    }

    func forgetDevices(on adapter: Adapter) throws { try available() }

    /// bluetoothd exits: its discovery's clients are gone with it, but the kernel runs the
    /// discovery on until its timeout (up to 10.24 s, seen in the lab on 6.12 and 6.1).
    /// bluetoothd exits; the bus tells the radio (NameOwnerChanged) unless `unheard` (not read yet).
    func exits(unheard: Bool = false) {
        isRunning = false
        stalled.withLock { $0 = false }
        silent.withLock { $0 = false }
        discovering.withLock { $0 = false }
        // The bus answers the calls it left unread.
        unreadLeaves.withLock { unread in defer { unread = nil }; return unread ?? [] }.forEach { $0() }
        if !unheard { serviceChanges.withLock { $0 }?(nil) }
    }

    /// The discovery ends with the controller, or its client (bluetoothd stops it).
    func discoveryEnded() {
        discovering.withLock { $0 = false }
        kernel.setScanning(false)
    }

    func followDevices(_ handler: @escaping @Sendable (DeviceReport) -> Void) throws -> [SignalSubscription] {
        deviceReports.withLock { $0 = handler }
        return []
    }

    private let deviceReports = Mutex<(@Sendable (DeviceReport) -> Void)?>(nil)

    /// A phone's advertisement heard: the kernel's Device Found events (`KernelModel.phoneHeard`),
    /// and, when its discovery heard it, bluetoothd's report of the device, with no RSSI for 0
    /// (src/device.c dev_property_exists_rssi), unless it drops reports, or later (`holdReports`).
    func phoneHeard(_ advertisement: PhoneAdvertisement) {
        guard kernel.phoneHeard(advertisement), isDiscovering, !isStalled, !dropsReports, let serviceData = advertisement.bluetoothdServiceData else { return }
        let report = DeviceReport(devicePath: "/org/bluez/hci0/dev_46_05_04_03_02_01", adapter: "hci0", serviceData: serviceData,
                                  rssi: advertisement.rssi == 0 ? nil : Int16(advertisement.rssi))
        let late = lateReports.withLock { late in
            late?.append(report)
            return late != nil
        }
        if !late { deviceReports.withLock { $0 }?(report) }
    }

    func phoneHeard(_ serviceData: [UInt8]) { phoneHeard(.exposureNotification(serviceData)) }

    /// Its discovery runs in the kernel and it passes on no report (issue 56: the first sign of a
    /// bluetoothd that stopped reading the kernel's events).
    private let dropping = Mutex(false)
    var dropsReports: Bool {
        get { dropping.withLock { $0 } }
        set { dropping.withLock { $0 = newValue } }
    }

    /// A busy bluetoothd (make test's lab, a restarted one in a loaded guest): what its discovery
    /// hears it passes on only when `passOnLateReports` is called, after the scan may have ended.
    private let lateReports = Mutex<[DeviceReport]?>(nil)
    func holdReports() { lateReports.withLock { $0 = $0 ?? [] } }
    func passOnLateReports() {
        let reports = lateReports.withLock { late in
            defer { late = nil }
            return late ?? []
        }
        reports.forEach { report in deviceReports.withLock { $0 }?(report) }
    }
    func followService(_ handler: @escaping @Sendable (String?) -> Void) throws -> [SignalSubscription] {
        serviceChanges.withLock { $0 = handler }
        return []
    }

    private let serviceChanges = Mutex<(@Sendable (String?) -> Void)?>(nil)

    /// The bus's NameOwnerChanged of this bluetoothd's start, heard only now (one `starts(unheard:)`).
    func nameHeard() { serviceChanges.withLock { $0 }?(try? serviceOwner()) }

    /// A new bluetoothd (systemd restarts it): it owns org.bluez again, which the radio hears.
    func restarts(unheard: Bool = false, settingUpSlowly: Bool = false) {
        exits(unheard: unheard)
        starts(unheard: unheard, settingUpSlowly: settingUpSlowly)
    }
    /// A new bluetoothd takes org.bluez, which the radio hears unless `unheard`, and then offers
    /// hci0 when the kernel has the controller (its InterfacesAdded), and advertising on it at
    /// once, or only from `offersAdvertising()` on when `settingUpSlowly` (the lab's crowd).
    func starts(unheard: Bool = false, settingUpSlowly: Bool = false) {
        isRunning = true
        beingSetUp.withLock { $0 = settingUpSlowly ? ["hci0"] : [] }
        runs.withLock { $0 += 1 }
        guard !unheard else { return }
        nameHeard()
        if kernel.snapshot.present { adapterChanges.withLock { $0 }?(AdapterChange(adapter: "hci0", kind: .appeared)) }
    }

    /// Its runs so far: each has a unique bus name of its own.
    private let runs = Mutex(1)

    func serviceOwner() throws -> String? { isRunning ? "b0a5e1d2 :1.\(runs.withLock { $0 })" : nil }
    func followAdapters(_ handler: @escaping @Sendable (AdapterChange) -> Void) throws -> [SignalSubscription] {
        adapterChanges.withLock { $0 = handler }
        return []
    }

    private let adapterChanges = Mutex<(@Sendable (AdapterChange) -> Void)?>(nil)

    /// bluetoothd's signal of another adapter of the machine (hci1): it appeared, vanished, or was
    /// powered on or off.
    func anotherAdapter(_ kind: AdapterChange.Kind) {
        adapterChanges.withLock { $0 }?(AdapterChange(adapter: "hci\(KernelModel.another)", kind: kind))
    }
}

/// What the radio told the agent, for the driver to act on.
final class ListenerLog: RadioListener {
    enum Heard: Equatable { case removed, unfit(AgentStatus), lost, returned, scanStopped }
    private let heard = Mutex<[Heard]>([])

    func report(_ report: RadioReport) { received.withLock { $0.append(report) } }
    func radioChanged() {}

    private let received = Mutex<[RadioReport]>([])
    /// The sightings the radio reported, in order.
    var reports: [RadioReport] { received.withLock { $0 } }
    var reported: Int { reports.count }
    func radioLost() { heard.withLock { $0.append(.lost) } }
    func radioReturned() { heard.withLock { $0.append(.returned) } }
    func advertisementRemoved() { heard.withLock { $0.append(.removed) } }
    func adapterUnfitForAdvertising(_ problem: AgentStatus, because reason: String) { heard.withLock { $0.append(.unfit(problem)) } }
    func scanStopped() {
        heard.withLock { $0.append(.scanStopped) }
        stops.withLock { $0 += 1 }
    }

    private let stops = Mutex(0)
    var scanStops: Int { stops.withLock { $0 } }

    /// What was heard since the last call.
    func take() -> [Heard] { heard.withLock { state in defer { state = [] }; return state } }
}
