import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENRadio
import ENStore
@testable import enagentd
import Foundation
import Synchronization
import TestSupport
import Testing

/// enagentd's radio finds the adapter named by its controller's address under whichever name the
/// kernel gave it, against a stand-in bluetoothd on a private bus.
@Suite struct AdapterByAddressTests {
    let directory = TemporaryDirectory()
    static let dongle = "00:1A:7D:DA:71:13", builtIn = "B8:27:EB:00:00:01"

    /// A bluetoothd with hci0 and hci1, whose controllers' addresses the test swaps, as a reboot
    /// that finds them in the other order does; it counts the calls of GetManagedObjects.
    final class StandInBluetoothd: Sendable {
        /// What the controllers say, shared with the handlers.
        final class Controllers: Sendable {
            let addresses = Mutex(["hci0": AdapterByAddressTests.builtIn, "hci1": AdapterByAddressTests.dongle])
            let listed = Atomic<Int>(0)

            func properties(_ name: String) -> [String: DBusValue] {
                ["Address": .string(addresses.withLock { $0[name] ?? "" }), "Powered": .boolean(true)]
            }
        }

        let controllers = Controllers()
        let connection: DBusConnection

        init(bus: PrivateBus) throws {
            connection = try DBusConnection(address: bus.address)
            let controllers = self.controllers
            try connection.export(ExportedObject(path: "/", interfaces: [DBusInterface(BlueZ.objectManagerInterface, methods: [
                DBusMethod("GetManagedObjects", out: [DBusArgument("objects", "a{oa{sa{sv}}}")]) { _ in
                    controllers.listed.add(1, ordering: .relaxed)
                    return [.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", ["hci0", "hci1"].map { name in
                        DBusValue.DictionaryEntry(.objectPath("/org/bluez/" + name), .dictionary(keySignature: "s", valueSignature: "a{sv}", [
                            DBusValue.DictionaryEntry(.string(BlueZ.adapterInterface), .properties(controllers.properties(name))),
                            DBusValue.DictionaryEntry(.string(BlueZ.advertisingManagerInterface), .properties([:])),
                        ]))
                    })]
                },
            ])]))
            for name in ["hci0", "hci1"] {
                try connection.export(ExportedObject(path: "/org/bluez/" + name, interfaces: [DBusInterface(BlueZ.adapterInterface, properties: [
                    DBusProperty("Address", "s", get: { controllers.properties(name)["Address"]! }),
                    DBusProperty("Powered", "b", get: { .boolean(true) }),
                ])]))
            }
            try connection.requestName(BlueZ.service)
        }

        var listed: Int { controllers.listed.load(ordering: .relaxed) }

        func swap() { controllers.addresses.withLock { $0 = ["hci0": $0["hci1"]!, "hci1": $0["hci0"]!] } }
    }

    func radio(on bus: PrivateBus, adapter: String) throws -> BlueZRadio {
        BlueZRadio(client: BlueZClient(connection: try DBusConnection(address: bus.address)), management: KernelManagement(), adapter: AdapterChoice(adapter),
                   mayPowerOn: false, scanMode: .active, store: try AgentStore(path: directory.file("enagent.db")),
                   logger: LogCapture().logger(), queue: DispatchQueue(label: "radio"))
    }

    /// The owner of org.bluez as the bus names it: none before bluetoothd takes the name; then the
    /// bus's ID and bluetoothd's unique name; another after bluetoothd's restart.
    /// Each run of bluetoothd has a name of its own, and the bus's signal of its start names it
    /// as `serviceOwner` does (the radio keeps a stall of that very run, heard of late).
    @Test func theBusNamesEachRunOfBluetoothdApart() throws {
        let bus = try PrivateBus()
        let client = BlueZClient(connection: try DBusConnection(address: bus.address))
        #expect(try client.serviceOwner() == nil)
        let heard = Mutex([String?]()), signalled = DispatchSemaphore(value: 0)
        let subscriptions = try client.followService { owner in
            heard.withLock { $0.append(owner) }
            signalled.signal()
        }
        defer { subscriptions.forEach { $0.cancel() } }
        let first = try StandInBluetoothd(bus: bus).connection
        let id = try first.callBus("GetId")
        let owner = try #require(try client.serviceOwner())
        #expect(owner.hasPrefix("\(try #require(id.first?.string)) :") && owner.count > 34)
        first.close()
        let restarted = try StandInBluetoothd(bus: bus)
        let next = try #require(try client.serviceOwner())
        #expect(next.hasPrefix(owner.prefix(33)) && next != owner, "the same bus, another run of bluetoothd")
        #expect((0..<3).allSatisfy { _ in signalled.wait(timeout: .now() + 5) == .success })
        #expect(heard.withLock { $0 } == [owner, nil, next])
        withExtendedLifetime(restarted) {}
    }

    @Test func theAddressFindsTheSameControllerAfterTheKernelSwapsTheNames() throws {
        let bus = try PrivateBus()
        let bluetoothd = try StandInBluetoothd(bus: bus)
        let byAddress = try radio(on: bus, adapter: Self.dongle), byName = try radio(on: bus, adapter: "hci1")
        #expect(try byAddress.adapterOnItsQueue().name == "hci1" && byName.adapterOnItsQueue().name == "hci1")
        #expect(try byAddress.adapterOnItsQueue().name == "hci1")
        #expect(bluetoothd.listed == 1, "the name found is asked for by itself, not the whole list again")
        bluetoothd.swap()
        let found = try byAddress.adapterOnItsQueue()
        #expect(found.name == "hci0" && found.address == Self.dongle, "the dongle, now hci0")
        #expect(try byName.adapterOnItsQueue().address == Self.builtIn, "hci1 is the built-in adapter now")
        #expect(bluetoothd.listed == 2)
    }

    /// bluetoothd's signals of another adapter (hci0 powered off, then gone) are nothing to a radio
    /// on hci1; its own adapter's power-off is its loss. The lab saw another program's power cycle
    /// of its own adapter taken for this radio's loss, a fresh key mid-day each time.
    @Test func onlyItsOwnAdaptersLossReachesTheAgent() throws {
        let bus = try PrivateBus()
        let bluetoothd = try StandInBluetoothd(bus: bus)
        let radio = try radio(on: bus, adapter: "hci1")
        _ = try radio.adapterOnItsQueue()
        let agent = LossCounter()
        let subscriptions = try radio.follow(for: agent, logger: LogCapture().logger())
        defer { subscriptions.forEach { $0.cancel() } }
        func powered(_ name: String, _ on: Bool) throws {
            try bluetoothd.connection.emit(path: "/org/bluez/" + name, interface: ExportedObject.propertiesInterface, member: "PropertiesChanged",
                                           [.string(BlueZ.adapterInterface), .properties(["Powered": .boolean(on)]), .strings([])])
        }
        try powered("hci0", false)
        try bluetoothd.connection.emit(path: "/", interface: BlueZ.objectManagerInterface, member: "InterfacesRemoved",
                                       [.objectPath("/org/bluez/hci0"), .strings([BlueZ.adapterInterface, BlueZ.advertisingManagerInterface])])
        try powered("hci1", false)
        // Signals of one sender arrive in order: once hci1's is handled, hci0's were.
        let deadline = Date().addingTimeInterval(10)
        while agent.losses == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(agent.lossesAndReturns == ["lost"], "another adapter's signals went before and reached nothing")
    }

    /// What the radio told the agent of losses and returns.
    final class LossCounter: RadioListener {
        private let heard = Mutex([String]())
        var lossesAndReturns: [String] { heard.withLock { $0.filter { $0 != "returned" } } }
        var losses: Int { heard.withLock { $0.filter { $0.hasPrefix("lost") }.count } }
        func report(_ report: RadioReport) {}
        func radioChanged() {}
        func radioLost() { heard.withLock { $0.append("lost") } }
        func radioReturned() { heard.withLock { $0.append("returned") } }
        func advertisementRemoved() {}
        func adapterUnfitForAdvertising(_ problem: AgentStatus, because reason: String) {}
        func scanStopped() {}
    }
}

extension BlueZRadio {
    /// `adapter()` on the radio's queue, where the agent calls it.
    fileprivate func adapterOnItsQueue() throws -> Adapter { try queue.sync { try adapter() } }
}
