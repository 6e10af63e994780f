import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENCore
import ENStore
@testable import enagentd
import ENSystemd
import Foundation
import Synchronization
import TestSupport
import Testing

/// The status lines a daemon reported, in order.
final class StatusLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// The system clock, which closes `store` the first time it is read once armed: the database's
/// reads start failing just after the daemon has read its state.
final class ClockClosingTheStore: AgentClock {
    private let armed = Mutex<AgentStore?>(nil)

    func closeAtNextRead(_ store: AgentStore) { armed.withLock { $0 = store } }

    var now: Int64 {
        try? armed.withLock { store in defer { store = nil }; return store }?.close()
        return SystemClock().now
    }
    var steadySeconds: Double { SystemClock().steadySeconds }
    var awakeSeconds: Double { SystemClock().awakeSeconds }
    func realSeconds(until time: Int64) -> Double { SystemClock().realSeconds(until: time) }
}

struct DaemonStatusTests {
    let directory = TemporaryDirectory()
    let queue = DispatchQueue(label: "test.daemon")
    let lines = StatusLines()

    func daemon(_ store: AgentStore, clock: any AgentClock = SystemClock()) throws -> Daemon {
        return Daemon(store: store, clock: clock, retention: .protocolDefault, synchronisation: nil, radio: nil,
                      trustedKeys: [], logger: Logger(label: "test"), queue: queue, reportStatus: lines.append)
    }

    /// A database that cannot be read is said so, not taken for "no consent yet".
    @Test func anUnreadableStoreIsAStatusNotAGuess() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let daemon = try daemon(store)
        #expect(daemon.perform { daemon.status } == .consentRequired)
        try store.close()
        #expect(daemon.perform { daemon.status } == .storeUnreadable)
        #expect(!AgentStatus.storeUnreadable.runsAgent, "nothing runs without knowing the person's consent")
    }

    /// The status line tells when the pause ends, from the same look at the store that found the
    /// pause: a read failing just after it is no "paused until 0", and arms no timer for then.
    @Test func aPauseIsShownWithItsEndEvenWhenTheStoreFailsRightAfter() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let pauseEnd = SystemClock().now + 3_600
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: SystemClock().now))
        try store.set(StoreSettings.pausedUntil, to: pauseEnd)
        let clock = ClockClosingTheStore()
        let daemon = try daemon(store, clock: clock)
        clock.closeAtNextRead(store)
        queue.sync { daemon.clockBecameTrusted() }
        queue.sync { Thread.sleep(forTimeInterval: 0.3) }  // time for a timer armed for "0" to fire
        #expect(lines.all.first == "paused until \(pauseEnd) (unix time)")
        #expect(lines.all.count == 1, "no timer for a pause end that was not known")
    }

    /// The wall clock set past the pause's end (`ClockChanges`) ends the pause then, not at the
    /// time the pause's timer was armed for by the clock before; the upkeep's look at the clock
    /// notes the step.
    @Test func aClockSetPastThePausesEndEndsItAtOnce() throws {
        let store = try AgentStore(path: directory.file("enagent.db"))
        let clock = SimulatedClock(1_700_006_400)
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: clock.now))
        try store.set(StoreSettings.pausedUntil, to: clock.now + 3_600)
        let capture = LogCapture()
        let daemon = Daemon(store: store, clock: clock, retention: .protocolDefault, synchronisation: nil, radio: nil,
                            trustedKeys: [], logger: capture.logger(), queue: queue, reportStatus: lines.append)
        queue.sync { daemon.clockBecameTrusted() }
        #expect(lines.all.last == "paused until \(clock.now + 3_600) (unix time)")
        clock.step(by: 7_200)
        queue.sync { daemon.clockWasSet() }
        #expect(daemon.perform { daemon.my.running != nil }, "running again: \(lines.all)")
        clock.step(by: 600)
        queue.sync { daemon.clockWasSet() }
        #expect(capture.records.contains { $0.message.hasPrefix("the system clock was stepped forward by 600 s") }, "\(capture.records.map(\.message))")
        queue.sync { daemon.stop() }
    }

    /// The kernel gives the timer that hears the clock being set (the service lab sets the clock
    /// and times what follows; a test may not).
    @Test func theKernelGivesTheTimerThatHearsTheClockSet() {
        #expect(ClockChanges(queue: queue) {} != nil)
    }

    /// A store that cannot be read is looked at again by itself, and what it says then applies.
    @Test func anUnreadableStoreIsReadAgainByItself() throws {
        let path = directory.file("enagent.db"), away = directory.file("away.db")
        let store = try AgentStore(path: path)
        let pauseEnd = SystemClock().now + 3_600
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: SystemClock().now))
        try store.set(StoreSettings.pausedUntil, to: pauseEnd)
        let daemon = try daemon(store)
        try FileManager.default.moveItem(atPath: path, toPath: away)  // no reader can open it
        queue.sync { daemon.clockBecameTrusted() }
        #expect(lines.all.last?.hasPrefix("store-unreadable: cannot read consent and pause from the database") == true)
        try FileManager.default.moveItem(atPath: away, toPath: path)
        let deadline = Date(timeIntervalSinceNow: Daemon.storeRetrySeconds + 5)
        while lines.all.count < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(lines.all.dropFirst().first == "paused until \(pauseEnd) (unix time)")
    }

    /// The status lists the adapter in use first, by name, with the correction its address gets
    /// (its own or the default), then every other adapter the configuration names.
    @Test func theAdapterInUseComesFirstThenTheOthersNamed() throws {
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), builtIn = try #require(BluetoothAddress("B8:27:EB:00:00:01"))
        let unnamed = try #require(BluetoothAddress("B8:27:EB:00:00:02"))
        let corrections = RssiCorrections(defaultCorrection: 3, byAdapter: [builtIn: -8, dongle: 5])
        #expect(Daemon.adapterRssiCorrections(corrections, adapterInUse: "hci1", address: dongle) == [
            AdapterRssiCorrection(address: "00:1A:7D:DA:71:13", name: "hci1", rssiCorrection: 5, configured: true),
            AdapterRssiCorrection(address: "B8:27:EB:00:00:01", name: "", rssiCorrection: -8, configured: true),
        ])
        #expect(Daemon.adapterRssiCorrections(corrections, adapterInUse: "hci0", address: unnamed).first
                == AdapterRssiCorrection(address: "B8:27:EB:00:00:02", name: "hci0", rssiCorrection: 3, configured: false))
        #expect(Daemon.adapterRssiCorrections(corrections, adapterInUse: "hci0", address: nil).first
                == AdapterRssiCorrection(address: "", name: "hci0", rssiCorrection: 3, configured: false), "BlueZ has not given its address yet")
        #expect(Daemon.adapterRssiCorrections(corrections, adapterInUse: "", address: nil).map(\.address) == ["00:1A:7D:DA:71:13", "B8:27:EB:00:00:01"])
    }

    /// PropertiesChanged names what changed only: the daemon names every property its status may
    /// have moved, and a radio change that leaves the status alone announces no Status. A batch
    /// of sightings stored announces SightingsStored alone.
    @Test func aRadioChangeThatLeavesTheStatusAloneAnnouncesNoStatus() throws {
        let bus = try PrivateBus()
        let server = try DBusConnection(address: bus.address), client = try DBusConnection(address: bus.address)
        let store = try AgentStore(path: directory.file("enagent.db"))
        let daemon = try daemon(store)
        let object = ExposureNotificationService(daemon: daemon, sessions: DetectionSessions(bus: nil, idleLimit: .seconds(1), logger: Logger(label: "test")),
                                                 authorise: { _ in }).object()
        try server.export(object)
        queue.sync { daemon.announceChanges(through: object) }
        let announced = Mutex([[String]]())
        let subscription = try client.subscribe(MatchRule(path: object.path, interface: ExportedObject.propertiesInterface, member: "PropertiesChanged")) {
            message in announced.withLock { $0.append(message.arguments.dropFirst().first?.stringKeyed?.keys.sorted() ?? []) }
        }
        defer { subscription.cancel() }
        /// Waits for the `count`th signal, then a while for one that must not come. Each change
        /// is announced once the one before it was: an announcement reads the values of its time.
        func heard(_ count: Int) {
            let deadline = Date().addingTimeInterval(5)
            while announced.withLock({ $0.count }) < count && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            Thread.sleep(forTimeInterval: 0.2)
        }
        queue.sync { daemon.apply() }
        heard(1)
        queue.sync { daemon.apply() }
        heard(1)
        queue.sync {
            daemon.my.radio = RadioState(scanning: true)
            daemon.apply()
        }
        heard(2)
        try store.record((1...2).map { Sighting(rpi: Bytes16(high: $0, low: 0), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: -60, time: 100, adapter: "hci0") })
        heard(3)
        let signals = announced.withLock { $0 }
        #expect(signals.count == 3, "the second apply changed nothing and announced nothing: \(signals)")
        #expect(signals.first?.contains(AgentProperties().$status.name) == true)
        #expect(signals.dropFirst().first == [AgentProperties().$scanning.name])
        #expect(signals.last == [AgentProperties().$sightingsStored.name])
    }

    /// Each property of the contract is one row of the service, in the interface's order, and a
    /// fact changed announces the properties whose rows name it, the constant ones never.
    @Test func eachPropertyIsOneRowAndAFactAnnouncesThePropertiesMadeOfIt() {
        let properties = AgentProperties()
        #expect(ExposureNotificationService.properties.map(\.name) == AgentProperties.declarations.map(\.name))
        #expect(ExposureNotificationService.names(changedWith: [.detection]) == [properties.$lastDetection.name, properties.$lastDetectionError.name])
        #expect(ExposureNotificationService.names(changedWith: [.radio])
                == [properties.$status.name, properties.$adapter.name, properties.$advertising.name, properties.$scanning.name,
                    properties.$adapterRssiCorrections.name])
        #expect(ExposureNotificationService.names(changedWith: []) == [])
        let everyFact = Set(ExposureNotificationService.names(changedWith: Set(DaemonFact.allCases)))
        #expect(everyFact == Set(AgentProperties.declarations.map(\.name)).subtracting([properties.$version.name, properties.$rssiCorrection.name]))
    }
}
