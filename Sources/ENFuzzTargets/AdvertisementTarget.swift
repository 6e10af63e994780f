import ENCore

/// An advertisement of any device in range and its scan response, as the kernel passes them on
/// in Device Found events: the first byte is the advertising data's length, then the advertising
/// data, then the scan response (at most 255 bytes each, as an HCI report carries). A passive
/// scan hears the advertising data alone, an active one both, the advertising data first, each
/// cut as the kernel cuts it (`kernelCut`). The EN service data found in either
/// (`AdvertisingData`) must be nothing or 20 bytes of one EN structure, the same on both scans
/// when the advertisement has it, else the scan response's. Then, as RadioAgent.report(_:) takes
/// it, split into the RPI (16 bytes) and the AEM (4), the AEM decrypted as a matched key's AEMK
/// decrypts it and the metadata decoded. (`report(_:)` needs a running agent, so its few lines
/// are repeated here.)
public func fuzzAdvertisement(_ input: UnsafeRawBufferPointer) {
    guard let length = input.first else { return }
    let rest = Array(input.dropFirst())
    let advertisingData = kernelCut(Array(rest.prefix(Int(length))))
    let scanResponse = kernelCut(Array(rest.dropFirst(Int(length)).prefix(255)))
    let deviceFound = advertisingData + scanResponse
    let passive = AdvertisingData.exposureNotificationServiceData(in: advertisingData).map(Array.init)
    let active = AdvertisingData.exposureNotificationServiceData(in: deviceFound)
    precondition(active.map(Array.init) == passive ?? AdvertisingData.exposureNotificationServiceData(in: scanResponse).map(Array.init),
                 "the active scan's sighting is not the advertisement's, or without one the scan response's")
    guard let found = active else { return }
    precondition(found.count == AdvertisingData.exposureNotificationPayloadLength, "service data of \(found.count) bytes")
    precondition(AdvertisingData.exposureNotificationHeaders.contains { header in
        found.startIndex > header.count && Int(deviceFound[found.startIndex - header.count - 1]) == header.count + found.count
            && deviceFound[(found.startIndex - header.count)..<found.startIndex].elementsEqual(header)
    }, "service data not where an EN structure is")
    let serviceData = Array(found)
    let rpi = serviceData.withUnsafeBytes { Bytes16($0) }
    guard let aem = AssociatedEncryptedMetadata(bytes: serviceData[16...]) else {
        preconditionFailure("20 bytes of service data did not give a 4-byte AEM")
    }
    precondition(rpi.bytes == Array(serviceData[..<16]) && aem.bytes == Array(serviceData[16...]), "the split lost bytes")
    guard let metadata = try? AdvertisementFixtures.crypto.decryptMetadata(aem, key: AdvertisementFixtures.aemk, rpi: rpi) else { return }
    let reread = Metadata(bytes: metadata.bytes)
    precondition(reread == metadata, "metadata does not survive encoding")
    _ = Sighting(rpi: rpi, aem: aem, rssi: Sighting.rssi(reported: Int16(metadata.transmitPower)), time: 0, adapter: "hci0")
}

/// `data` as the kernel passes a report on: cut before a zero length or a structure that runs
/// past the end ("advertising data len corrected", net/bluetooth/hci_event.c process_adv_report,
/// 6.1 and 6.12).
func kernelCut(_ data: [UInt8]) -> [UInt8] {
    var end = 0
    while end < data.count, data[end] > 0, end + 1 + Int(data[end]) <= data.count { end += 1 + Int(data[end]) }
    return Array(data[..<end])
}

enum AdvertisementFixtures {
    /// One crypto context for the process (libFuzzer runs inputs on one thread).
    nonisolated(unsafe) static let crypto = try! ExposureCrypto()
    /// The AEMK of the EN crypto test vectors' TEK, so that the seeds (its RPI ‖ AEM pairs)
    /// decrypt to the vectors' metadata 40 08 00 00.
    static let aemk = try! Bytes16(hex: "d57c46af7a1d83965b9bed8bd152936a")
}
