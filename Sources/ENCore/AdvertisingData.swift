/// Advertising data as received from any device in range (Core Spec Vol 3, Part C, 11: a list of
/// AD structures, each a length byte, then the AD type and length − 1 bytes of data). Strangers
/// write it: a structure that runs past the end ends the list, as a controller's own parser does.
///
/// The one reading of EN advertisements for both scans: the radio takes every sighting from the
/// kernel's Device Found events, whose data is the advertising data, in an active scan followed
/// by the scan response data (docs/radio.md, "Where a scan's sightings come from").
public enum AdvertisingData {
    /// How EN service data begins on the air: the AD type of service data with a 16-, 32- or
    /// 128-bit UUID, then 0xFD6F in that form, little-endian (the longer forms are of the
    /// Bluetooth base UUID, Core Vol 3 Part B 2.5.1). bluetoothd counts all three as one: it keys
    /// ServiceData by the 128-bit UUID whatever the form.
    public static let exposureNotificationHeaders: [[UInt8]] = [
        [0x16, 0x6F, 0xFD],
        [0x20, 0x6F, 0xFD, 0x00, 0x00],
        [0x21, 0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x6F, 0xFD, 0x00, 0x00],
    ]
    /// RPI (16 bytes) ‖ AEM (4): the service data of the EN Bluetooth Specification.
    public static let exposureNotificationPayloadLength = 20

    /// The RPI ‖ AEM of the first well-formed EN service data in `data` (exactly 20 bytes after
    /// the UUID, in any of its forms), nil when there is none. Other EN structures before it, cut
    /// short or too long, are skipped. No UUID list is needed. Since the kernel puts the scan
    /// response after the advertising data, cutting each at its first malformed structure,
    /// the advertisement's wins over the scan response's.
    public static func exposureNotificationServiceData(in data: [UInt8]) -> ArraySlice<UInt8>? {
        var offset = 0
        while offset < data.count {
            let length = Int(data[offset])
            let end = offset + 1 + length
            // A zero length ends the data early (Core Vol 3 Part C 11), as bluetoothd reads it too.
            guard length > 0, end <= data.count else { return nil }
            let structure = data[(offset + 1)..<end]
            if exposureNotificationHeaders.contains(where: { structure.count == $0.count + exposureNotificationPayloadLength && structure.starts(with: $0) }) {
                return data[(end - exposureNotificationPayloadLength)..<end]
            }
            offset = end
        }
        return nil
    }
}
