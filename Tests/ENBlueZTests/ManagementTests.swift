@testable import ENBlueZ
import Testing

/// The management commands byte by byte, against the layouts of BlueZ's doc/mgmt-api.txt and
/// what btmon decoded of bluetoothd's own commands in the lab.
@Suite struct ManagementTests {
    @Test func advertisingIntervalsAreInSlotsOfFiveEighthsOfAMillisecond() {
        #expect(AddExtendedAdvertisingParameters.slots(milliseconds: 200) == 320)
        #expect(AddExtendedAdvertisingParameters.slots(milliseconds: 270) == 432)
        #expect(AddExtendedAdvertisingParameters.slots(milliseconds: 1280) == 0x0800, "the kernel's default, as btmon showed it")
    }

    @Test func addExtendedAdvertisingParametersIsEighteenBytesInTheDocumentedOrder() {
        let command = AddExtendedAdvertisingParameters(instance: 5, flags: [.useInterval], interval: 320...432, transmitPower: -4)
        #expect(AddExtendedAdvertisingParameters.opcode == 0x0054)
        #expect(command.parameters == [0x05, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x40, 0x01, 0x00, 0x00, 0xB0, 0x01, 0x00, 0x00, 0xFC])
        // The duration's flag is bit 12 (MGMT_ADV_PARAM_DURATION), its seconds the two octets after the flags.
        let turns = AddExtendedAdvertisingParameters(instance: 2, flags: [.useDuration, .useInterval], durationSeconds: 0x1234, interval: 320...432, transmitPower: 0)
        #expect(turns.parameters == [0x02, 0x00, 0x50, 0x00, 0x00, 0x34, 0x12, 0x00, 0x00,
                                     0x40, 0x01, 0x00, 0x00, 0xB0, 0x01, 0x00, 0x00, 0x00])
        #expect(ManagementPacket.command(0x0054, controller: 1, command.parameters).prefix(6) == [0x54, 0x00, 0x01, 0x00, 0x12, 0x00])
        let reply = try? AddExtendedAdvertisingParameters.decode([0x05, 0xF9, 0xFB, 0xFB])
        #expect(reply == .init(instance: 5, transmitPower: -7, maximumDataLength: 251))
        #expect(throws: ManagementError.malformedReply(AddExtendedAdvertisingParameters.name, [0x05])) {
            try AddExtendedAdvertisingParameters.decode([0x05])
        }
    }

    @Test func theOtherCommandsEncodeAsDocumented() throws {
        #expect(AddExtendedAdvertisingData(instance: 2, advertisingData: [0xAA, 0xBB]).parameters == [0x02, 0x02, 0x00, 0xAA, 0xBB])
        #expect(RemoveAdvertising(instance: 7).parameters == [0x07])
        #expect(AddAdvertising(instance: 5, timeoutSeconds: 1, advertisingData: []).parameters == [0x05, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0, 0])
        #expect(AddAdvertising(instance: 1, timeoutSeconds: 0x0102, advertisingData: [0xAA]).parameters == [0x01, 0, 0, 0, 0, 0, 0, 0x02, 0x01, 1, 0, 0xAA])
        #expect(StopDiscovery().parameters == [0x06])
        #expect(SetPowered(true).parameters == [0x01] && SetPowered(false).parameters == [0x00])
        #expect(try SetPowered.decode([0x01, 0x02, 0, 0]) == [.powered, .le])
        #expect(throws: ManagementError.malformedReply(SetPowered.name, [0x01])) { try SetPowered.decode([0x01]) }
        #expect([AddExtendedAdvertisingData.opcode, RemoveAdvertising.opcode, StopDiscovery.opcode, ReadAdvertisingFeatures.opcode,
                 ReadControllerInformation.opcode, AddAdvertising.opcode, SetPowered.opcode] == [0x0055, 0x003F, 0x0024, 0x003D, 0x0004, 0x003E, 0x0005])
    }

    /// The kernel (6.1) as Read Advertising Features shows it: instances numbered above the count
    /// of instances are left out of the list.
    struct KernelInstances {
        var maximum: UInt8
        var inUse: Set<UInt8>
        /// The controller's advertising sets free for instances (fewer than `maximum` when the
        /// kernel's own advertisement holds one).
        var sets = Int.max
        var features: ReadAdvertisingFeatures.Features {
            .init(supportedFlags: 0, maximumDataLength: 31, maximumInstances: maximum,
                  instances: inUse.filter { Int($0) <= inUse.count }.sorted())
        }
        /// What the agent finds free, and whether every instance it held was new (never another's).
        func highestFree() -> (free: UInt8?, heldOnlyFree: Bool) {
            var kernel = self, heldOnlyFree = true
            let survey = AdvertisingInstances.survey(features) { instance in
                guard kernel.inUse.count < kernel.sets else { return nil }
                heldOnlyFree = heldOnlyFree && kernel.inUse.insert(instance).inserted
                return kernel.features.instances
            }
            return (survey.highestFree(maximum: maximum), heldOnlyFree)
        }
    }

    /// Another program's instance is never taken, also where the kernel's list does not show it:
    /// a beacon alone in the highest instance is found by holding free instances for a moment.
    /// `sets`: the advertising sets the controller has for instances.
    static let instanceCases: [(maximum: UInt8, others: Set<UInt8>, sets: Int, expected: UInt8?)] = [
        (3, [3], 3, 2),        // the lab's beacon: listed only once two more are held
        (3, [], 3, 3),         // nothing else: the highest
        (3, [1], 3, 3),        // bluetoothd's first advertisement
        (3, [2, 3], 3, 1),
        (5, [5, 4], 5, 3),
        (3, [1, 2, 3], 3, nil), // every instance taken
        (0, [], 0, nil),       // no advertising at all
        // The kernel's own advertisement of a connectable adapter, left on when it stopped being
        // connectable, holds one of btvirt's three sets: the survey runs out at the third.
        (3, [], 2, 2),
        (3, [3], 2, 1),
        (3, [1, 2], 2, nil),
    ]

    @Test(arguments: instanceCases)
    func anInstanceIsTakenOnlyWhenFree(maximum: UInt8, others: Set<UInt8>, sets: Int, expected: UInt8?) {
        let kernel = KernelInstances(maximum: maximum, inUse: others, sets: sets)
        if others == [3] { #expect(kernel.features.instances.isEmpty, "the beacon is not listed") }
        let (free, heldOnlyFree) = kernel.highestFree()
        #expect(free == expected)
        #expect(heldOnlyFree, "an instance held for the survey was another program's")
        #expect(free.map { !others.contains($0) } ?? true)
    }

    @Test func repliesDecodeAndShortOnesAreRefused() throws {
        let features = try ReadAdvertisingFeatures.decode([0xFF, 0xF7, 0x01, 0x00, 0x1F, 0x1F, 0x05, 0x02, 0x01, 0x05])
        #expect(features == .init(supportedFlags: 0x0001_F7FF, maximumDataLength: 31, maximumInstances: 5, instances: [1, 5]))
        #expect(throws: ManagementError.self) { try ReadAdvertisingFeatures.decode([0xFF, 0xF7, 0x01, 0x00, 0x1F, 0x1F, 0x05, 0x03, 0x01]) }
        #expect(features.hasExtendedAdvertising)
        // What kernel 6.1 offers a BT 4.x controller: no secondary PHY, no hardware offload.
        let legacy = try ReadAdvertisingFeatures.decode([0x7F, 0xC0, 0x01, 0x00, 0x1F, 0x1F, 0x05, 0x00])
        #expect(!legacy.hasExtendedAdvertising && legacy.supportedFlags == 0x0001_C07F)

        var information = [UInt8](repeating: 0, count: 280)
        // The address as btmon recorded the lab's hci0 (00:AA:01:00:00:00), least significant byte first.
        information.replaceSubrange(0..<6, with: [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00])
        information[9] = 0xFF  // supported: powered … BR/EDR
        information[10] = 0x06  // supported: LE, advertising
        information[13] = 0x83  // powered, connectable, BR/EDR
        information[14] = 0x02  // LE
        let controller = try ReadControllerInformation.decode(information)
        #expect(controller.address.description == "00:AA:01:00:00:00")
        #expect(controller.current == [.powered, .connectable, .bredr, .le])
        #expect(controller.supported.contains([.powered, .le, .advertising]) && !controller.supported.contains(.privacy))
        #expect(throws: ManagementError.self) { try ReadControllerInformation.decode(Array(information.prefix(16))) }

        #expect(try ReadControllerIndexList.decode([0x02, 0x00, 0x00, 0x00, 0x03, 0x00]) == [0, 3])
        #expect(try ReadControllerIndexList.decode([0x00, 0x00]) == [])
        #expect(throws: ManagementError.self) { try ReadControllerIndexList.decode([0x02, 0x00, 0x00, 0x00]) }
    }

    /// New Settings as btmon recorded it when `btmgmt --index 0 connectable on` ran on a BT 4.x
    /// controller (0x00000a03: powered, connectable, LE, Secure Connections).
    @Test func newSettingsNameTheControllerAndItsSettings() {
        let event: [UInt8] = [0x06, 0x00, 0x00, 0x00, 0x04, 0x00, 0x03, 0x0A, 0x00, 0x00]
        #expect(ManagementPacket.event(event) == .newSettings(controller: 0, [.powered, .connectable, .le, ReadControllerInformation.Settings(rawValue: 1 << 11)]))
        #expect(ManagementPacket.event([0x06, 0x00, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00]) == .newSettings(controller: 2, [.powered]))
        #expect(ManagementPacket.event(Array(event.prefix(9))) == nil, "cut short")
        let classOfDevice: [UInt8] = [0x07, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00]
        #expect(ManagementPacket.event(classOfDevice) == nil, "an event the agent does not act on")
    }

    /// Discovering as btmon recorded it in the lab (trixie, kernel 6.12) when bluetoothd started
    /// and stopped a discovery for the agent on hci1: LE public and random, on, then off.
    @Test func discoveringNamesTheAddressTypesAndWhetherItRuns() {
        #expect(ManagementPacket.event([0x13, 0x00, 0x01, 0x00, 0x02, 0x00, 0x06, 0x01]) == .discovering(controller: 1, addressTypes: 0x06, active: true))
        #expect(ManagementPacket.event([0x13, 0x00, 0x01, 0x00, 0x02, 0x00, 0x07, 0x00]) == .discovering(controller: 1, addressTypes: 0x07, active: false))
        #expect(ManagementPacket.event([0x13, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06]) == nil, "cut short")
        #expect(StopDiscovery(addressTypes: 0x07).parameters == [0x07])
        #expect(StopDiscovery().parameters == [leAddressTypes])
    }

    /// An EN advertisement as kernel 6.1 reported it in the lab to a control socket while a
    /// monitor for 0xFD6F service data was registered on a BT 4.x controller (Advertisement
    /// Monitor Device Found, handle 0: the kernel does not match patterns itself), and the same
    /// fields in a Device Found event (while a discovery runs).
    @Test func devicesFoundCarryTheAddressRSSIAndAdvertisingData() {
        let data: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD, 0x53, 0x4A, 0xFD, 0x5F, 0x9A, 0x51, 0xC5, 0x94,
                             0xA0, 0xD7, 0xD4, 0xAB, 0xC0, 0x9A, 0x6A, 0xC7, 0x7F, 0xF6, 0x36, 0xD9]
        let fields: [UInt8] = [0xC5, 0xB4, 0xA9, 0xA2, 0xC0, 0x16, 0x02, 0x7F, 0x04, 0x00, 0x00, 0x00, UInt8(data.count), 0x00] + data
        let expected = DeviceFound(address: [0xC5, 0xB4, 0xA9, 0xA2, 0xC0, 0x16], addressType: 2, rssi: 127, flags: 4, data: data)
        let monitorFound: [UInt8] = [0x2F, 0x00, 0x01, 0x00, UInt8(fields.count + 2), 0x00, 0x00, 0x00] + fields
        #expect(ManagementPacket.event(monitorFound) == .deviceFound(controller: 1, expected))
        let found: [UInt8] = [0x12, 0x00, 0x00, 0x00, UInt8(fields.count), 0x00] + fields
        #expect(ManagementPacket.event(found) == .deviceFound(controller: 0, expected))
        #expect(ManagementPacket.event(Array(found.dropLast())) == nil, "shorter than its length says")
        var lying = found
        lying[18] = 0x20
        #expect(ManagementPacket.event(lying) == nil, "advertising data longer than the event")
        let weak: [UInt8] = [0x12, 0x00, 0x00, 0x00, 14, 0x00, 1, 2, 3, 4, 5, 6, 0x01, 0xB5, 0, 0, 0, 0, 0, 0]
        #expect(ManagementPacket.event(weak) == .deviceFound(controller: 0, DeviceFound(address: [1, 2, 3, 4, 5, 6], addressType: 1, rssi: -75, flags: 0, data: [])))
        // Read without decoding, as the socket's reader sorts them: the RSSI apart from the rest.
        for (packet, controller) in [(monitorFound, UInt16(1)), (found, 0)] {
            var louder = packet
            louder[packet.count - fields.count + 7] = 0xC4
            #expect(ManagementPacket.report(packet)?.rssi == 127 && ManagementPacket.report(louder)?.rssi == -60)
            #expect(ManagementPacket.report(packet)?.controller == controller)
            #expect(ManagementPacket.report(packet)?.advertisement == ManagementPacket.report(louder)?.advertisement)
        }
        var otherAddress = found
        otherAddress[6] ^= 1
        #expect(ManagementPacket.report(otherAddress)?.advertisement != ManagementPacket.report(found)?.advertisement)
        #expect(ManagementPacket.report(Array(found.prefix(13))) == nil && ManagementPacket.report([0x06, 0x00, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00]) == nil)
    }

    @Test func monitorCommandsAndEventsAreAsDocumented() throws {
        let add = AddAdvertisementPatternsMonitor(patterns: [.exposureNotification])
        #expect(add.parameters.count == 1 + 34)
        #expect(add.parameters.prefix(6) == [0x01, 0x16, 0x00, 0x02, 0x6F, 0xFD])
        #expect(add.parameters.dropFirst(6).allSatisfy { $0 == 0 })
        #expect(try AddAdvertisementPatternsMonitor.decode([0x01, 0x00]) == 1, "the lab's answer: handle 1")
        #expect(RemoveAdvertisementMonitor(handle: 0x0102).parameters == [0x02, 0x01])
        // The lab's answer on a controller without Microsoft's extension and no monitor yet, and one with two.
        #expect(try ReadAdvertisementMonitorFeatures.decode([0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0x10, 0x00, 0x00]) == [])
        #expect(try ReadAdvertisementMonitorFeatures.decode([0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0x10, 0x02, 0x00, 0x01, 0x00, 0x03, 0x00]) == [1, 3])
        #expect(throws: ManagementError.self) { try ReadAdvertisementMonitorFeatures.decode([0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0x10, 0x02, 0x00, 0x01, 0x00]) }
        #expect(ManagementPacket.event([0x2C, 0x00, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00]) == .monitorRemoved(controller: 1, handle: 3))
        #expect(ManagementPacket.event([0x23, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01]) == .advertisingAdded(controller: 0, instance: 1), "bluetoothd's first instance")
        #expect(ManagementPacket.event([0x23, 0x00, 0x00, 0x00, 0x00, 0x00]) == nil, "no instance")
        #expect(ManagementPacket.event([0x24, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05]) == .advertisingRemoved(controller: 0, instance: 5))
    }

    /// Only the answer to our command on our controller counts; every management socket also
    /// hears other events (devices found, other controllers' answers).
    @Test func onlyTheAnswerToTheCommandOnItsControllerIsTaken() {
        let complete: [UInt8] = [0x01, 0x00, 0x01, 0x00, 0x07, 0x00, 0x54, 0x00, 0x00, 0x05, 0x00, 0xFB, 0xFB]
        #expect(ManagementPacket.answer(complete, to: 0x0054, controller: 1)?.parameters == [0x05, 0x00, 0xFB, 0xFB])
        #expect(ManagementPacket.answer(complete, to: 0x0054, controller: 0) == nil, "another controller's answer")
        #expect(ManagementPacket.answer(complete, to: 0x0055, controller: 1) == nil, "another command's answer")
        let status: [UInt8] = [0x02, 0x00, 0x01, 0x00, 0x03, 0x00, 0x54, 0x00, 0x0D]
        #expect(ManagementPacket.answer(status, to: 0x0054, controller: 1)?.status == 0x0D)
        let deviceFound: [UInt8] = [0x12, 0x00, 0x01, 0x00, 0x03, 0x00, 0x54, 0x00, 0x00]
        #expect(ManagementPacket.answer(deviceFound, to: 0x0054, controller: 1) == nil)
        #expect(ManagementPacket.answer(Array(complete.prefix(10)), to: 0x0054, controller: 1) == nil, "cut short")
        #expect(ManagementError.refused("Remove Advertising", controller: 0, status: 0x0D).description
                == "hci0 refused Remove Advertising: Invalid Parameters (management status 0xd)")
    }

    /// The EN Bluetooth Specification's advertisement: Flags (general discoverable), the UUID
    /// list, then the service data; 31 bytes.
    @Test func theAdvertisingPayloadIsTheSpecifications() {
        let serviceData = (0..<20).map(UInt8.init)
        let dualMode = ExposureNotificationAdvertisement.payload(serviceData: serviceData, adapterRunsBREDR: true)
        #expect(dualMode == [0x02, 0x01, 0x1A, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD] + serviceData)
        #expect(dualMode.count == 31)
        let leOnly = ExposureNotificationAdvertisement.payload(serviceData: serviceData, adapterRunsBREDR: false)
        #expect(leOnly.prefix(3) == [0x02, 0x01, 0x06])
        #expect(leOnly[2] & 0x02 != 0 && dualMode[2] & 0x02 != 0, "LE General Discoverable Mode is set")
    }
}
