import ENCore
import Foundation
import Testing

/// The published vectors of exposure-notifications-server (protocol.md §5).
@Suite struct ExposureKeyHMACTests {
    static func key(_ base64: String, start: UInt32, risk: Int) -> TemporaryExposureKey {
        TemporaryExposureKey(keyData: Bytes16(bytes: Data(base64Encoded: base64)!)!, rollingStartIntervalNumber: ENIntervalNumber(start),
                             rollingPeriod: 144, transmissionRiskLevel: risk)
    }

    @Test func matchesTheServersVectors() {
        let secret = Array(UInt8(1)...UInt8(16))
        let keys = [Self.key("z2Cx9hdz2SlxZ8GEgqTYpA==", start: 1, risk: 3), Self.key("dPCphLzfG4uzXneNimkPRQ==", start: 144, risk: 5)]
        #expect(ExposureKeyHMAC.cleartext(keys) == "dPCphLzfG4uzXneNimkPRQ==.144.144.5,z2Cx9hdz2SlxZ8GEgqTYpA==.1.144.3")
        #expect(Data(ExposureKeyHMAC.code(secret: secret, keys: keys)).base64EncodedString() == "2u1nHt5WWurJytFLF3xitNzM99oNrad2y4YGOL53AeY=")
        let noRisk = keys.map { key in var key = key; key.transmissionRiskLevel = 0; return key }
        #expect(Data(ExposureKeyHMAC.code(secret: secret, keys: noRisk)).base64EncodedString() == "mFNI9zhTA17n4ndd1Vu5tsn4XQX0gPrIKyjeh/9noUE=")
    }
}
