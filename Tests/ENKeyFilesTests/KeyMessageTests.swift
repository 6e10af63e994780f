import ENCore
import ENKeyFiles
import Foundation
import TestSupport
import Testing

/// TemporaryExposureKey messages: the scanner reads the plain form, the full reader everything
/// else, and both read a key the same way.
@Suite struct KeyMessageTests {
    static let keyData = (1...16).map { UInt8($0) }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value, bytes = [UInt8]()
        repeat {
            bytes.append(UInt8(value & 0x7f) | (value > 0x7f ? 0x80 : 0))
            value >>= 7
        } while value > 0
        return bytes
    }

    /// Field 1 (key data), 3 (rolling start) and whatever `more` adds.
    static func message(start: UInt64 = 2_700_000, _ more: [UInt8] = []) -> [UInt8] {
        [0x0A, 16] + keyData + [0x18] + varint(start) + more
    }

    func scanned(_ message: [UInt8]) -> DiagnosisKey? { message.withUnsafeBytes { KeyExport.scannedKey($0) } }

    @Test(arguments: [
        message(),
        message([0x10, 7, 0x20, 72, 0x28, 3, 0x30] + varint(5)),   // risk 7, period 72, self report, onset -3
        message([0x30] + varint(8)),                                // onset 4
    ])
    func thePlainFormIsScanned(message: [UInt8]) throws {
        let key = try #require(scanned(message))
        #expect(try KeyExport.decodedKey(Data(message)) == key)
        #expect(key.key.keyData == Bytes16(bytes: Self.keyData) && key.key.rollingStartIntervalNumber.rawValue == 2_700_000)
    }

    @Test func absentFieldsTakeTheProtocolsDefaults() throws {
        let key = try #require(scanned(Self.message()))
        #expect(key.key.rollingPeriod == 144 && key.key.transmissionRiskLevel == 0 && key.reportType == .unknown && key.daysSinceOnsetOfSymptoms == nil)
    }

    /// Valid keys the scanner leaves to the full reader: an unknown field, a field twice (the last
    /// wins), a risk level that truncates into range.
    @Test(arguments: [
        message([0x48, 1]),
        message([0x20, 10, 0x20, 20]),
        message([0x10] + varint(1 << 32 | 3)),
    ])
    func otherEncodingsAreDecoded(message: [UInt8]) throws {
        #expect(scanned(message) == nil)
        _ = try KeyExport.decodedKey(Data(message))
    }

    /// Invalid keys are declined by the scanner and refused with the reason.
    @Test(arguments: [
        ([0x0A, 15] + Array(keyData.prefix(15)) + [0x18, 1], "key data is 15 bytes"),
        ([0x0A, 16] + keyData, "no rolling start interval number"),
        (message([0x20, 0]), "rolling period 0"),
        (message([0x10, 9]), "transmission risk level 9"),
        (message(start: UInt64(bitPattern: -1)), "is negative"),
        ([0x0A, 16] + Array(keyData.prefix(10)), "not a TemporaryExposureKey message"),
    ] as [([UInt8], String)])
    func invalidKeysAreRefused(message: [UInt8], reason: String) {
        #expect(scanned(message) == nil)
        let error = expectError(KeyFileError.self) { try KeyExport.decodedKey(Data(message)) }
        #expect(error.map { "\($0)".contains(reason) } == true, "\(String(describing: error))")
    }
}
