import CENOpenSSL

/// The EN derivations (protocol.md §1) on OpenSSL, holding its contexts for reuse.
///
/// Creating the contexts costs far more than one derivation, so a caller that derives many keys
/// keeps one instance. An instance is not thread-safe: use one per thread or task.
public final class ExposureCrypto {
    private let hmacAlgorithm: OpaquePointer
    /// Keyed once with HKDF's empty salt: each extract re-initialises from the stored pads.
    private let extractHMAC: OpaquePointer
    private let hmac: OpaquePointer
    private let aes128ECB: OpaquePointer
    private let aes128CTR: OpaquePointer
    private let cipher: OpaquePointer

    private static let rpikInfo = Array("EN-RPIK".utf8) + [0x01]
    private static let aemkInfo = Array("EN-AEMK".utf8) + [0x01]
    private static let emptySalt = [UInt8](repeating: 0, count: 32)
    private static let paddedDataPrefix = Array("EN-RPI".utf8) + [UInt8](repeating: 0, count: 6)

    public init() throws {
        guard let algorithm = EVP_MAC_fetch(nil, "HMAC", nil) else { throw CryptoError.failure("EVP_MAC_fetch(HMAC)") }
        guard let context = EVP_MAC_CTX_new(algorithm), let extractContext = EVP_MAC_CTX_new(algorithm) else {
            EVP_MAC_free(algorithm)
            throw CryptoError.failure("EVP_MAC_CTX_new")
        }
        guard let ecb = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else {
            EVP_MAC_CTX_free(context); EVP_MAC_free(algorithm)
            throw CryptoError.failure("EVP_CIPHER_fetch(AES-128-ECB)")
        }
        guard let ctr = EVP_CIPHER_fetch(nil, "AES-128-CTR", nil) else {
            EVP_CIPHER_free(ecb); EVP_MAC_CTX_free(context); EVP_MAC_free(algorithm)
            throw CryptoError.failure("EVP_CIPHER_fetch(AES-128-CTR)")
        }
        guard let cipherContext = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_free(ctr); EVP_CIPHER_free(ecb); EVP_MAC_CTX_free(context); EVP_MAC_free(algorithm)
            throw CryptoError.failure("EVP_CIPHER_CTX_new")
        }
        hmacAlgorithm = algorithm
        hmac = context
        extractHMAC = extractContext
        aes128ECB = ecb
        aes128CTR = ctr
        cipher = cipherContext
        // The parameter's name and value must outlive the array only for the call: HMAC copies them.
        let configured = "SHA256".withCString { digest in
            var parameters = [
                OSSL_PARAM_construct_utf8_string(CENOPENSSL_PARAM_DIGEST, UnsafeMutablePointer(mutating: digest), 0),
                OSSL_PARAM_construct_end(),
            ]
            return EVP_MAC_CTX_set_params(hmac, &parameters) == 1 && EVP_MAC_CTX_set_params(extractHMAC, &parameters) == 1
        }
        guard configured, EVP_MAC_init(extractHMAC, Self.emptySalt, Self.emptySalt.count, nil) == 1
        else { throw CryptoError.failure("HMAC-SHA256 set-up") }
    }

    deinit {
        EVP_CIPHER_CTX_free(cipher)
        EVP_CIPHER_free(aes128CTR)
        EVP_CIPHER_free(aes128ECB)
        EVP_MAC_CTX_free(hmac)
        EVP_MAC_CTX_free(extractHMAC)
        EVP_MAC_free(hmacAlgorithm)
    }

    /// A new TEK from OpenSSL's CSPRNG.
    public static func generateTemporaryExposureKey() throws -> TemporaryExposureKeyData {
        var key = [UInt8](repeating: 0, count: 16)
        guard RAND_priv_bytes(&key, 16) == 1 else { throw CryptoError.failure("RAND_priv_bytes") }
        return TemporaryExposureKeyData(bytes: key)!
    }

    /// RPIK = HKDF-SHA256(TEK, empty salt, "EN-RPIK", 16).
    public func rollingProximityIdentifierKey(for tek: TemporaryExposureKeyData) throws -> Bytes16 {
        try hkdf(tek, info: Self.rpikInfo)
    }

    /// AEMK = HKDF-SHA256(TEK, empty salt, "EN-AEMK", 16).
    public func associatedEncryptedMetadataKey(for tek: TemporaryExposureKeyData) throws -> Bytes16 {
        try hkdf(tek, info: Self.aemkInfo)
    }

    /// The RPIs of `count` consecutive intervals from `first`, in one AES-ECB pass.
    /// Intervals past the end of the uint32 range wrap, as the 32-bit field on the air does.
    public func rollingProximityIdentifiers(
        key rpik: Bytes16, from first: ENIntervalNumber, count: Int
    ) throws -> [RollingProximityIdentifier] {
        precondition(count >= 0, "count must not be negative")
        var identifiers = [RollingProximityIdentifier]()
        identifiers.reserveCapacity(count)
        try withRollingProximityIdentifiers(key: rpik, from: first, count: count) { blocks in
            for index in 0..<count { identifiers.append(Bytes16(blocks, offset: index * 16)) }
        }
        return identifiers
    }

    /// Derives the RPIs of `count` intervals into a buffer that `body` reads in place
    /// (16 bytes per interval): the allocation-free form for matchers.
    public func withRollingProximityIdentifiers<Result>(
        key rpik: Bytes16, from first: ENIntervalNumber, count: Int,
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        var paddedData = [UInt8](repeating: 0, count: count * 16)
        for index in 0..<count {
            let base = index * 16
            for (offset, byte) in Self.paddedDataPrefix.enumerated() { paddedData[base + offset] = byte }
            let interval = first.rawValue &+ UInt32(truncatingIfNeeded: index)
            paddedData[base + 12] = UInt8(truncatingIfNeeded: interval)
            paddedData[base + 13] = UInt8(truncatingIfNeeded: interval >> 8)
            paddedData[base + 14] = UInt8(truncatingIfNeeded: interval >> 16)
            paddedData[base + 15] = UInt8(truncatingIfNeeded: interval >> 24)
        }
        var identifiers = [UInt8](repeating: 0, count: count * 16)
        try rpik.withUnsafeBytes { key in
            guard EVP_EncryptInit_ex2(cipher, aes128ECB, key.baseAddress, nil, nil) == 1,
                  EVP_CIPHER_CTX_set_padding(cipher, 0) == 1
            else { throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-ECB)") }
            var written: Int32 = 0
            guard count == 0 || EVP_EncryptUpdate(cipher, &identifiers, &written, paddedData, Int32(count * 16)) == 1
            else { throw CryptoError.failure("EVP_EncryptUpdate(AES-128-ECB)") }
        }
        return try identifiers.withUnsafeBytes(body)
    }

    /// The RPI of one interval.
    public func rollingProximityIdentifier(key rpik: Bytes16, interval: ENIntervalNumber) throws -> RollingProximityIdentifier {
        try rollingProximityIdentifiers(key: rpik, from: interval, count: 1)[0]
    }

    /// AEM = AES-128-CTR(AEMK, counter block = RPI, metadata).
    public func encryptMetadata(_ metadata: Metadata, key aemk: Bytes16, rpi: RollingProximityIdentifier) throws -> AssociatedEncryptedMetadata {
        AssociatedEncryptedMetadata(bytes: try aesCTR(metadata.bytes, key: aemk, counter: rpi))!
    }

    /// The inverse of `encryptMetadata`: CTR mode is its own inverse.
    public func decryptMetadata(_ aem: AssociatedEncryptedMetadata, key aemk: Bytes16, rpi: RollingProximityIdentifier) throws -> Metadata {
        Metadata(bytes: try aesCTR(aem.bytes, key: aemk, counter: rpi))!
    }

    private func aesCTR(_ input: [UInt8], key: Bytes16, counter: Bytes16) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: input.count)
        try key.withUnsafeBytes { keyBytes in
            try counter.withUnsafeBytes { counterBytes in
                guard EVP_EncryptInit_ex2(cipher, aes128CTR, keyBytes.baseAddress, counterBytes.baseAddress, nil) == 1
                else { throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-CTR)") }
                var written: Int32 = 0
                guard EVP_EncryptUpdate(cipher, &output, &written, input, Int32(input.count)) == 1
                else { throw CryptoError.failure("EVP_EncryptUpdate(AES-128-CTR)") }
            }
        }
        return output
    }

    /// HKDF-SHA256 for a 16-byte output: PRK = HMAC(zero salt, IKM), OKM = HMAC(PRK, info ‖ 0x01)[0..<16].
    private func hkdf(_ inputKey: Bytes16, info infoAndCounter: [UInt8]) throws -> Bytes16 {
        var pseudorandomKey = [UInt8](repeating: 0, count: 32)
        try inputKey.withUnsafeBytes { ikm in
            // A NULL key reuses the salt keyed in at init.
            try mac(extractHMAC, key: nil, message: ikm, into: &pseudorandomKey)
        }
        var okm = [UInt8](repeating: 0, count: 32)
        try infoAndCounter.withUnsafeBytes { message in
            try mac(hmac, key: pseudorandomKey, message: message, into: &okm)
        }
        return okm.withUnsafeBytes { Bytes16($0) }
    }

    private func mac(_ context: OpaquePointer, key: [UInt8]?, message: UnsafeRawBufferPointer, into digest: inout [UInt8]) throws {
        var length = 0
        guard EVP_MAC_init(context, key, key?.count ?? 0, nil) == 1,
              EVP_MAC_update(context, message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1,
              EVP_MAC_final(context, &digest, &length, digest.count) == 1, length == 32
        else { throw CryptoError.failure("HMAC-SHA256") }
    }
}
