/// A failure inside OpenSSL. The derivations cannot fail on valid input, so this means a broken
/// or misconfigured libcrypto (for example a FIPS-only provider without AES-ECB).
public struct CryptoError: Error, CustomStringConvertible {
    public let operation: String
    public let reason: String

    public var description: String { "OpenSSL \(operation) failed: \(reason)" }
}
