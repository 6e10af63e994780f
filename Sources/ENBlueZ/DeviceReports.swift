import ENBus

/// What bluetoothd shows of the EN devices it hears (Device1's ServiceData and RSSI), as reports:
/// the radio's sightings when it has no management socket (the kernel's Device Found events
/// otherwise). bluetoothd announces only what changed, so the last of each is kept per device.
///
/// It follows ENCore's `AdvertisingData` as far as bluetoothd's view allows: any form of the
/// service data's UUID counts (bluetoothd keys ServiceData by the 128-bit one), no UUID list is
/// looked for, and an RSSI of 0 is 0. It cannot tell which of two FD6F structures came first:
/// bluetoothd keeps the last of the advertisement and its scan response, malformed or not
/// (src/device.c add_service_data).
struct DeviceReports {
    private struct Device {
        var serviceData: [UInt8]
        var rssi: Int16?
    }

    /// Only devices that carried EN service data: `forget` removes them from bluetoothd.
    private var devices = [String: Device]()

    /// A device bluetoothd added (InterfacesAdded), with every property it has.
    mutating func appeared(path: String, properties: [String: DBusValue]) -> DeviceReport? {
        // bluetoothd shows no RSSI while it holds 0 (src/device.c dev_property_exists_rssi), and a
        // device it adds carries the RSSI of the report that made it: absent, that was 0.
        report(path: path, properties: properties, rssiIfAbsent: 0)
    }

    /// A device's changed properties (PropertiesChanged), and those it no longer has.
    mutating func changed(path: String, properties: [String: DBusValue], invalidated: [String]) -> DeviceReport? {
        // An RSSI gone went to 0: a reading of 0, which comes with the service data (DuplicateData),
        // or the discovery's end (src/adapter.c invalidate_rssi_and_tx_power), which is no report.
        report(path: path, properties: properties, rssiIfAbsent: invalidated.contains("RSSI") ? 0 : nil)
    }

    /// Forgets the devices under `prefix` (an adapter's path), and returns their paths.
    mutating func forget(under prefix: String) -> [String] {
        let paths = devices.keys.filter { $0.hasPrefix(prefix) }
        paths.forEach { devices[$0] = nil }
        return paths
    }

    /// A report when the device's EN service data came, or its RSSI with a new value, naming the
    /// RSSI kept (bluetoothd announces a change of less than 8 dB not at all: device_set_rssi).
    private mutating func report(path: String, properties: [String: DBusValue], rssiIfAbsent: Int16?) -> DeviceReport? {
        let parts = path.split(separator: "/")
        guard parts.count >= 4, parts[0] == "org", parts[1] == "bluez" else { return nil }
        let received = properties["ServiceData"]?.stringKeyed?.first { $0.key.lowercased() == BlueZ.exposureNotificationUUID }?.value.byteArray
        let rssi = properties["RSSI"]?.integer.flatMap { Int16(exactly: $0) }
        guard var device = received.map({ Device(serviceData: $0, rssi: devices[path]?.rssi) }) ?? devices[path] else { return nil }
        if let current = rssi ?? rssiIfAbsent { device.rssi = current }
        devices[path] = device
        guard received != nil || rssi != nil else { return nil }
        return DeviceReport(devicePath: path, adapter: String(parts[2]), serviceData: device.serviceData, rssi: device.rssi)
    }
}
