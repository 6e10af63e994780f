import CENOpenSSL
import FoundationEssentials
import Glibc

/// HMAC-SHA256 of a whole message (for the verification protocol; HKDF has its own fast path).
public enum HMACSHA256 {
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &code, &length)
        return code
    }
}

/// The HMAC that binds a verification certificate to the keys being shared (protocol.md §5):
/// over the keys sorted by their base64 form, each `base64key.rollingStart.rollingPeriod.transmissionRisk`,
/// joined with commas.
public enum ExposureKeyHMAC {
    public static func cleartext(_ keys: [TemporaryExposureKey]) -> String {
        keys.map { key in
            (base64: Data(key.keyData.bytes).base64EncodedString(), key: key)
        }.sorted { $0.base64 < $1.base64 }.map {
            "\($0.base64).\($0.key.rollingStartIntervalNumber.rawValue).\($0.key.rollingPeriod).\($0.key.transmissionRiskLevel)"
        }.joined(separator: ",")
    }

    public static func code(secret: [UInt8], keys: [TemporaryExposureKey]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: secret, message: Array(cleartext(keys).utf8))
    }
}
