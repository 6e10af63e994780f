import ENCore

/// The advertising data of any device in range, as the kernel passes it on in a Device Found
/// event: the 0xFD6F service data found in it (`AdvertisingData`); then, as RadioAgent.report(_:)
/// takes that, refused unless 20 bytes, else split into the RPI (16 bytes) and the AEM (4); then
/// the AEM decrypted as a matched key's AEMK decrypts it and the metadata decoded.
/// (`report(_:)` needs a running agent, so its few lines are repeated here.)
public func fuzzAdvertisement(_ input: UnsafeRawBufferPointer) {
    let advertisingData = Array(input)
    guard let found = AdvertisingData.exposureNotificationServiceData(in: advertisingData) else { return }
    precondition(found.startIndex >= 4 && found.endIndex <= advertisingData.count
                 && Array(advertisingData[(found.startIndex - 3)..<found.startIndex]) == [0x16, 0x6F, 0xFD], "service data not where its structure is")
    let serviceData = Array(found)
    guard serviceData.count == 20 else { return }
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

enum AdvertisementFixtures {
    /// One crypto context for the process (libFuzzer runs inputs on one thread).
    nonisolated(unsafe) static let crypto = try! ExposureCrypto()
    /// The AEMK of the EN crypto test vectors' TEK, so that the seeds (its RPI ‖ AEM pairs)
    /// decrypt to the vectors' metadata 40 08 00 00.
    static let aemk = try! Bytes16(hex: "d57c46af7a1d83965b9bed8bd152936a")
}
