import CENOpenSSL

/// A failure inside OpenSSL. The derivations cannot fail on valid input, so this means a broken
/// or misconfigured libcrypto (for example a FIPS-only provider without AES-ECB).
public struct CryptoError: Error, CustomStringConvertible {
    public let operation: String
    public let reason: String

    public var description: String { "OpenSSL \(operation) failed: \(reason)" }

    /// The failure of `operation`, with the reason OpenSSL queued for it.
    static func failure(_ operation: String) -> CryptoError {
        let code = ERR_get_error()
        ERR_clear_error()
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let reason = code == 0 ? "no error reported" : String(decoding: text.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
        return CryptoError(operation: operation, reason: reason)
    }
}
