@testable import ENBlueZ
import ENBus
import Testing

/// bluetoothd's Device1 signals read as the radio's reports when it has no management socket, as
/// close to the kernel's path as bluetoothd shows them (issue 56, item 4).
@Suite struct DeviceReportsTests {
    static let device = "/org/bluez/hci0/dev_46_05_04_03_02_01", keyboard = "/org/bluez/hci0/dev_00_1A_7D_DA_71_20"
    static let rpiAndAEM = Array(0..<20).map(UInt8.init)

    /// ServiceData as bluetoothd keys it: by the 128-bit UUID, whatever form went on the air.
    static func serviceData(_ bytes: [UInt8]) -> DBusValue {
        .dictionary(keySignature: "s", valueSignature: "v", [DBusValue.DictionaryEntry(.string(BlueZ.exposureNotificationUUID), .variant(.bytes(bytes)))])
    }

    /// bluetoothd has no RSSI property while it holds 0, so an RSSI of 0 came as none: it is 0, as
    /// the kernel's Device Found says, not unknown.
    @Test func anRSSIOf0Is0() {
        var reports = DeviceReports()
        let appeared = reports.appeared(path: Self.device, properties: ["ServiceData": Self.serviceData(Self.rpiAndAEM)])
        #expect(appeared?.rssi == 0 && appeared?.serviceData == Self.rpiAndAEM && appeared?.adapter == "hci0")
        _ = reports.changed(path: Self.device, properties: ["RSSI": .int16(-60), "ServiceData": Self.serviceData(Self.rpiAndAEM)], invalidated: [])
        let changed = reports.changed(path: Self.device, properties: ["ServiceData": Self.serviceData(Self.rpiAndAEM)], invalidated: ["RSSI"])
        #expect(changed?.rssi == 0, "a reading of 0 after another comes as the RSSI invalidated")
        #expect(reports.changed(path: Self.device, properties: ["RSSI": .int16(127)], invalidated: [])?.rssi == 127, "127 stays: not available")
    }

    /// bluetoothd announces an RSSI only when it moved by 8 dB or more: service data without one
    /// was received at the RSSI last announced (it was reported as unknown). The discovery's end
    /// takes every RSSI away, which is no reception.
    @Test func serviceDataWithoutAnRSSIHasTheLastOne() {
        var reports = DeviceReports()
        #expect(reports.appeared(path: Self.keyboard, properties: ["RSSI": .int16(-40)]) == nil, "no EN service data: nothing")
        _ = reports.appeared(path: Self.device, properties: ["RSSI": .int16(-60), "ServiceData": Self.serviceData(Self.rpiAndAEM)])
        let next = reports.changed(path: Self.device, properties: ["ServiceData": Self.serviceData(Self.rpiAndAEM)], invalidated: [])
        #expect(next?.rssi == -60)
        #expect(reports.changed(path: Self.device, properties: ["RSSI": .int16(-70)], invalidated: [])?.serviceData == Self.rpiAndAEM,
                "a new RSSI alone is a reception of the service data kept")
        #expect(reports.changed(path: Self.device, properties: [:], invalidated: ["RSSI"]) == nil, "the discovery's end")
        // Only devices that carried EN service data are forgotten (RemoveDevice unpairs a paired one).
        #expect(reports.forget(under: "/org/bluez/hci0/dev_") == [Self.device])
        #expect(reports.changed(path: Self.device, properties: ["RSSI": .int16(-50)], invalidated: []) == nil, "forgotten")
    }
}
