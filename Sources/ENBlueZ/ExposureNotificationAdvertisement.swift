/// The EN advertisement as it goes on the air (EN Bluetooth Specification v1.2, "Advertising
/// Payload"; protocol.md §2): Flags with LE General Discoverable Mode set, the complete list of
/// 16-bit service UUIDs with 0xFD6F, then 0xFD6F service data of RPI ‖ AEM. 31 bytes.
public enum ExposureNotificationAdvertisement {
    /// 200–270 ms, as reference devices advertise (protocol.md §2).
    public static let intervalMilliseconds: ClosedRange<UInt32> = 200...270

    /// Flags bit 1, LE General Discoverable Mode, which the specification requires.
    static let generalDiscoverable: UInt8 = 0x02
    /// Bits 3 and 4: LE and BR/EDR on the same device (controller and host), as iPhones send (0x1A).
    static let simultaneousLEAndBREDR: UInt8 = 0x18
    /// Bit 2: BR/EDR not supported, for an adapter that runs LE only.
    static let brEdrNotSupported: UInt8 = 0x04

    /// The advertising data for `serviceData` (20 bytes: RPI ‖ AEM). The Flags tell the truth
    /// about BR/EDR: 0x1A on a dual-mode adapter (as iPhones), 0x06 on an LE-only one.
    public static func payload(serviceData: [UInt8], adapterRunsBREDR: Bool) -> [UInt8] {
        precondition(serviceData.count == 20, "EN service data is RPI (16) ‖ AEM (4)")
        let flags = generalDiscoverable | (adapterRunsBREDR ? simultaneousLEAndBREDR : brEdrNotSupported)
        return [0x02, 0x01, flags, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD] + serviceData
    }
}
