import ENCore
import Testing

@Suite struct ExposureCryptoTests {
    let vectors: OfficialVectors
    let crypto: ExposureCrypto
    let tek: TemporaryExposureKeyData

    init() throws {
        vectors = try OfficialVectors.load()
        crypto = try ExposureCrypto()
        tek = try Bytes16(hex: vectors.tek)
    }

    @Test func fixtureHoldsEveryInterval() {
        #expect(vectors.intervals.count == 144)
        #expect(vectors.intervals.map(\.en_interval_number) == Array(vectors.rolling_start_interval_number..<vectors.rolling_start_interval_number + 144))
    }

    @Test func derivesTheOfficialKeys() throws {
        #expect(crypto.rollingProximityIdentifierKey(for: tek).hex == vectors.rpik)
        #expect(crypto.associatedEncryptedMetadataKey(for: tek).hex == vectors.aemk)
    }

    @Test func derivesAllOfficialRPIsInOnePass() throws {
        let rpik = crypto.rollingProximityIdentifierKey(for: tek)
        let start = ENIntervalNumber(vectors.rolling_start_interval_number)
        let rpis = try crypto.rollingProximityIdentifiers(key: rpik, from: start, count: 144)
        #expect(rpis.map(\.hex) == vectors.intervals.map(\.rpi))
    }

    @Test func derivesEachOfficialRPIAndAEMAlone() throws {
        let rpik = crypto.rollingProximityIdentifierKey(for: tek)
        let aemk = crypto.associatedEncryptedMetadataKey(for: tek)
        let metadata = try #require(Metadata(bytes: try [UInt8](hex: vectors.metadata)))
        for interval in vectors.intervals {
            let rpi = try crypto.rollingProximityIdentifier(key: rpik, interval: ENIntervalNumber(interval.en_interval_number))
            #expect(rpi.hex == interval.rpi, "RPI of interval \(interval.en_interval_number)")
            let aem = try crypto.encryptMetadata(metadata, key: aemk, rpi: rpi)
            #expect(aem.hex == interval.aem, "AEM of interval \(interval.en_interval_number)")
            #expect(try crypto.decryptMetadata(aem, key: aemk, rpi: rpi) == metadata)
        }
    }

    @Test func theOfficialMetadataIsVersion1WithTransmitPower8() throws {
        let metadata = try #require(Metadata(bytes: try [UInt8](hex: vectors.metadata)))
        #expect(metadata == Metadata(majorVersion: 1, minorVersion: 0, transmitPower: 8))
    }

    @Test func aBigEndianIntervalWouldNotMatch() throws {
        let rpik = crypto.rollingProximityIdentifierKey(for: tek)
        let swapped = ENIntervalNumber(vectors.rolling_start_interval_number.byteSwapped)
        #expect(try crypto.rollingProximityIdentifier(key: rpik, interval: swapped).hex != vectors.intervals[0].rpi)
    }

    @Test func generatedKeysAreFreshAndRoundTrip() throws {
        let keys = try (0..<64).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
        #expect(Set(keys).count == keys.count)
        let metadata = Metadata(majorVersion: 1, minorVersion: 1, transmitPower: -12, calibrationConfidence: 2)
        for key in keys {
            let rpik = crypto.rollingProximityIdentifierKey(for: key)
            let aemk = crypto.associatedEncryptedMetadataKey(for: key)
            #expect(rpik != aemk)
            let rpis = try crypto.rollingProximityIdentifiers(key: rpik, from: ENIntervalNumber(2_700_000), count: 144)
            #expect(Set(rpis).count == 144)
            let aem = try crypto.encryptMetadata(metadata, key: aemk, rpi: rpis[7])
            #expect(try crypto.decryptMetadata(aem, key: aemk, rpi: rpis[7]) == metadata)
            // Another interval's RPI gives another AEM (32 bits: a chance match is negligible,
            // unlike comparing decoded metadata, which ignores the reserved bytes).
            #expect(try crypto.encryptMetadata(metadata, key: aemk, rpi: rpis[8]) != aem)
        }
    }

    @Test func intervalsWrapAtTheEndOfTheUInt32Range() throws {
        let rpik = crypto.rollingProximityIdentifierKey(for: tek)
        let rpis = try crypto.rollingProximityIdentifiers(key: rpik, from: ENIntervalNumber(UInt32.max), count: 2)
        let wrapped = try crypto.rollingProximityIdentifier(key: rpik, interval: ENIntervalNumber(0))
        #expect(rpis[1] == wrapped)
    }

    @Test func zeroIntervalsGiveNoIdentifiers() throws {
        #expect(try crypto.rollingProximityIdentifiers(key: tek, from: ENIntervalNumber(0), count: 0).isEmpty)
    }
}
