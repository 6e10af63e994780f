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

/// The AD structures any device in range sends, read for EN service data.
@Suite struct AdvertisingDataTests {
    /// The lab's EN advertisement from a BT 4.x controller (Flags 0x06, UUID list, service data).
    @Test func theServiceDataFollowsTheUUID() throws {
        let rpiAndAEM = Array(0..<20).map(UInt8.init)
        let advertisement: [UInt8] = [0x02, 0x01, 0x06, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM
        #expect(AdvertisingData.exposureNotificationServiceData(in: advertisement).map(Array.init) == rpiAndAEM)
        let afterAnotherService: [UInt8] = [0x05, 0x16, 0xAA, 0xFE, 0x01, 0x02, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM
        #expect(AdvertisingData.exposureNotificationServiceData(in: afterAnotherService).map(Array.init) == rpiAndAEM)
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x03, 0x16, 0x6F, 0xFD]).map(Array.init) == [], "empty: the agent refuses its length")
    }

    @Test func malformedListsEndTheSearch() {
        let rpiAndAEM = [UInt8](repeating: 0xAB, count: 20)
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x02, 0x01, 0x06, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM.prefix(10)) == nil, "runs past the end")
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x00, 0x17, 0x16, 0x6F, 0xFD] + rpiAndAEM) == nil, "a zero length ends the list")
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x17, 0x16, 0x6F, 0xFE] + rpiAndAEM) == nil, "another UUID")
        #expect(AdvertisingData.exposureNotificationServiceData(in: [0x02, 0x16, 0x6F]) == nil, "a UUID cut short")
        #expect(AdvertisingData.exposureNotificationServiceData(in: []) == nil)
    }
}
