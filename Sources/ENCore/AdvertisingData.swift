/// Advertising data as received from any device in range (Core Spec Vol 3, Part C, 11: a list of
/// AD structures, each a length byte, then the AD type and length − 1 bytes of data). Strangers
/// write it: a structure that runs past the end ends the list, as a controller's own parser does.
public enum AdvertisingData {
    /// AD type "Service Data - 16-bit UUID".
    static let serviceData16: UInt8 = 0x16
    /// The Exposure Notification service, 0xFD6F, as it goes on the air (little-endian).
    static let exposureNotificationUUID: [UInt8] = [0x6F, 0xFD]

    /// The bytes after the UUID in the first 0xFD6F service data structure (RPI ‖ AEM when the
    /// sender follows the specification; the agent checks the length), nil when there is none.
    public static func exposureNotificationServiceData(in data: [UInt8]) -> ArraySlice<UInt8>? {
        var offset = 0
        while offset < data.count {
            let length = Int(data[offset])
            let end = offset + 1 + length
            guard length > 0, end <= data.count else { return nil }
            let structure = data[(offset + 1)..<end]
            if structure.first == serviceData16, structure.count >= 3, structure.dropFirst().prefix(2).elementsEqual(exposureNotificationUUID) {
                return structure.dropFirst(3)
            }
            offset = end
        }
        return nil
    }
}
