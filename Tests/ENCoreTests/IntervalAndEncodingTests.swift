import ENCore
import Testing

@Suite struct IntervalNumberTests {
    @Test func officialKeyGenerationTimeIsARollingPeriodStart() throws {
        let vectors = try OfficialVectors.load()
        let interval = try #require(ENIntervalNumber(unixSeconds: vectors.key_generation_unix_seconds))
        #expect(interval.rawValue == vectors.rolling_start_interval_number)
        #expect(interval.rollingPeriodStart == interval)
        #expect(interval.unixSeconds == vectors.key_generation_unix_seconds)
    }

    @Test func intervalsAreTenMinutesAndDaysStartAtMultiplesOf144() throws {
        let noon = try #require(ENIntervalNumber(unixSeconds: 1_585_828_799))
        #expect(noon.rawValue == 2_643_047)
        #expect(noon.rollingPeriodStart.rawValue == 2_642_976)
        #expect(ENIntervalNumber(unixSeconds: 599)?.rawValue == 0)
        #expect(ENIntervalNumber(unixSeconds: 600)?.rawValue == 1)
    }

    @Test func timesOutsideTheUInt32RangeHaveNoInterval() {
        #expect(ENIntervalNumber(unixSeconds: -1) == nil)
        #expect(ENIntervalNumber(unixSeconds: (Int64(UInt32.max) + 1) * 600) == nil)
        #expect(ENIntervalNumber(UInt32.max).advanced(by: 1) == nil)
        #expect(ENIntervalNumber(5).advanced(by: -6) == nil)
        #expect(ENIntervalNumber(5).advanced(by: 139) == ENIntervalNumber(144))
    }

    @Test func keyValidityCoversItsRollingPeriod() {
        let key = TemporaryExposureKey(keyData: .zero, rollingStartIntervalNumber: ENIntervalNumber(144), rollingPeriod: 10)
        #expect(!key.isValid(at: ENIntervalNumber(143)))
        #expect(key.isValid(at: ENIntervalNumber(144)))
        #expect(key.isValid(at: ENIntervalNumber(153)))
        #expect(!key.isValid(at: ENIntervalNumber(154)))
    }
}

@Suite struct MetadataTests {
    @Test func version10EncodesAsTheSpecSays() {
        #expect(Metadata(transmitPower: -7).bytes == [0x40, 0xf9, 0, 0])
    }

    @Test func version11CarriesCalibrationConfidence() throws {
        let metadata = Metadata(majorVersion: 1, minorVersion: 1, transmitPower: 4, calibrationConfidence: 3)
        #expect(metadata.bytes == [0x5c, 0x04, 0, 0])
        #expect(Metadata(bytes: metadata.bytes) == metadata)
    }

    @Test func decodingIgnoresReservedBytesAndVersion10Bits() throws {
        let metadata = try #require(Metadata(bytes: [0x4c, 0x80, 0xaa, 0x55]))
        #expect(metadata.majorVersion == 1 && metadata.minorVersion == 0)
        #expect(metadata.transmitPower == -128)
        #expect(metadata.calibrationConfidence == nil)
    }

    @Test func wrongLengthsAreRefused() {
        #expect(Metadata(bytes: [0x40, 0, 0]) == nil)
        #expect(AssociatedEncryptedMetadata(bytes: [1, 2, 3, 4, 5]) == nil)
    }

    @Test func aemHoldsItsBytesInOrder() throws {
        let aem = try AssociatedEncryptedMetadata(hex: "72033874")
        #expect(aem.bytes == [0x72, 0x03, 0x38, 0x74])
        #expect(aem.rawValue == 0x7203_3874)
    }
}

@Suite struct HexTests {
    @Test func decodesEitherCaseAndEncodesLowerCase() throws {
        #expect(try [UInt8](hex: "00aBfF") == [0x00, 0xab, 0xff])
        #expect([0x0a, 0xf0].hexString == "0af0")
        #expect(try Bytes16(hex: "000102030405060708090A0B0C0D0E0F").bytes == Array(0...15))
    }

    @Test func refusesMalformedHex() {
        #expect(throws: HexError.oddLength(3)) { try [UInt8](hex: "abc") }
        #expect(throws: HexError.invalidCharacter("g")) { try [UInt8](hex: "0g") }
        #expect(throws: HexError.wrongLength(expectedBytes: 16, actualBytes: 2)) { try Bytes16(hex: "abcd") }
    }

    @Test func bytes16NeverPrintsItsValue() throws {
        let key = try Bytes16(hex: "75c734c6dd1a782de7a965da5eb93125")
        #expect(!"\(key)".contains("75c7"))
    }
}

/// The AD structures any device in range sends, read for EN service data: one rule for both scans
/// (issue 56, item 4), the first well-formed FD6F service data, the advertisement's before the scan
/// response's.
@Suite struct AdvertisingDataTests {
    static let rpiAndAEM = Array(0..<20).map(UInt8.init), otherRPIAndAEM = [UInt8](repeating: 0xAB, count: 20)
    static let uuidList: [UInt8] = [0x03, 0x03, 0x6F, 0xFD]
    /// 0xFD6F as service data with a 16-, 32- and 128-bit UUID (the Bluetooth base UUID's), little-endian.
    static let uuid16: [UInt8] = [0x16, 0x6F, 0xFD], uuid32: [UInt8] = [0x20, 0x6F, 0xFD, 0x00, 0x00]
    static let uuid128: [UInt8] = [0x21, 0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x6F, 0xFD, 0x00, 0x00]

    /// One AD structure: the AD type and UUID, then `data`.
    static func structure(_ typeAndUUID: [UInt8], _ data: [UInt8]) -> [UInt8] { [UInt8(typeAndUUID.count + data.count)] + typeAndUUID + data }

    static func found(_ data: [UInt8]) -> [UInt8]? { AdvertisingData.exposureNotificationServiceData(in: data).map(Array.init) }

    /// The lab's EN advertisement from a BT 4.x controller (Flags 0x06, UUID list, service data).
    @Test func theServiceDataFollowsTheUUID() throws {
        let advertisement: [UInt8] = [0x02, 0x01, 0x06] + Self.uuidList + Self.structure(Self.uuid16, Self.rpiAndAEM)
        #expect(Self.found(advertisement) == Self.rpiAndAEM)
        let afterAnotherService: [UInt8] = [0x05, 0x16, 0xAA, 0xFE, 0x01, 0x02] + Self.structure(Self.uuid16, Self.rpiAndAEM)
        #expect(Self.found(afterAnotherService) == Self.rpiAndAEM)
    }

    /// Case 1: bluetoothd counts service data of 0xFD6F with a 32- or 128-bit UUID as of FD6F;
    /// the kernel's path did not.
    @Test func theUUIDCountsInEachOfItsForms() {
        for uuid in [Self.uuid16, Self.uuid32, Self.uuid128] {
            #expect(Self.found(Self.uuidList + Self.structure(uuid, Self.rpiAndAEM)) == Self.rpiAndAEM, "AD type \(uuid[0])")
        }
        #expect(Self.found(Self.structure([0x20, 0x6F, 0xFD, 0x01, 0x00], Self.rpiAndAEM)) == nil, "0x0001FD6F is another service")
        var notTheBaseUUID = Self.uuid128
        notTheBaseUUID[1] ^= 1
        #expect(Self.found(Self.structure(notTheBaseUUID, Self.rpiAndAEM)) == nil, "FD6F in another base is another service")
    }

    /// Case 2: with EN service data in both, bluetoothd kept the scan response's (the later one)
    /// and the kernel's path the advertisement's. The kernel puts the scan response after the
    /// advertising data in one Device Found event.
    @Test func theAdvertisementsServiceDataWinsOverTheScanResponses() {
        let scanResponse = Self.structure(Self.uuid16, Self.otherRPIAndAEM)
        #expect(Self.found(Self.uuidList + Self.structure(Self.uuid16, Self.rpiAndAEM) + scanResponse) == Self.rpiAndAEM)
        #expect(Self.found(Self.uuidList + Self.structure(Self.uuid128, Self.rpiAndAEM) + scanResponse) == Self.rpiAndAEM)
        #expect(Self.found(Self.uuidList + Self.structure(Self.uuid16, Array(Self.rpiAndAEM.prefix(19))) + scanResponse) == Self.otherRPIAndAEM,
                "the scan response's when the advertisement has none that is well-formed")
        #expect(Self.found(Self.uuidList + scanResponse) == Self.otherRPIAndAEM)
    }

    /// Case 3: a 3-byte FD6F structure before a valid one stored nothing on the kernel's path (the
    /// first FD6F structure was taken, malformed or not).
    @Test func malformedServiceDataBeforeAWellFormedOneIsSkipped() {
        for malformed in [[], Array(Self.otherRPIAndAEM.prefix(19)), Self.otherRPIAndAEM + [0]] {
            #expect(Self.found(Self.uuidList + Self.structure(Self.uuid16, malformed) + Self.structure(Self.uuid16, Self.rpiAndAEM)) == Self.rpiAndAEM,
                    "after \(malformed.count) bytes of service data")
            #expect(Self.found(Self.uuidList + Self.structure(Self.uuid16, malformed)) == nil, "\(malformed.count) bytes alone: nothing")
        }
        #expect(Self.found([0x02, 0x16, 0x6F]) == nil, "a UUID cut short")
    }

    /// Case 4: EN service data without the 16-bit UUID list, in any UUID form, is found (the
    /// kernel drops such an advertisement in bluetoothd's discovery, whose filter lists the UUID:
    /// docs/radio.md).
    @Test func noUUIDListIsNeeded() {
        for uuid in [Self.uuid16, Self.uuid32, Self.uuid128] {
            #expect(Self.found(Self.structure(uuid, Self.rpiAndAEM)) == Self.rpiAndAEM, "AD type \(uuid[0])")
        }
    }

    /// Case 5: an RSSI of 0 dBm is a reading like any other, 127 none (HCI: "not available"),
    /// whichever path reported it (bluetoothd shows no RSSI property for 0).
    @Test func anRSSIOf0Is0And127IsNone() {
        #expect(Sighting.rssi(reported: 0) == 0)
        #expect(Sighting.rssi(reported: -128) == -128 && Sighting.rssi(reported: 20) == 20)
        #expect(Sighting.rssi(reported: 127) == nil)
    }

    @Test func malformedListsEndTheSearch() {
        let rpiAndAEM = [UInt8](repeating: 0xAB, count: 20)
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x02, 0x01, 0x06, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM.prefix(10)) == nil, "runs past the end")
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x00, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM) == nil, "a zero length ends the list")
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x17, 0x16, 0x6F, 0xFE] + rpiAndAEM) == nil, "another UUID")
        #expect(AdvertisingData.exposureNotificationServiceData(in: []) == nil)
    }
}
