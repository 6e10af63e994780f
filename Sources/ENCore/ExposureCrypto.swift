import CENOpenSSL

/// The EN derivations (protocol.md §1) on OpenSSL, holding its contexts for reuse.
///
/// Creating the contexts costs far more than one derivation, so a caller that derives many keys
/// keeps one instance. An instance is not thread-safe: use one per thread or task.
public final class ExposureCrypto {
    private let hkdf = HKDF()
    private let rpikInfo = HKDF.Info(label: "EN-RPIK")
    private let aemkInfo = HKDF.Info(label: "EN-AEMK")
    private let aes128ECB: OpaquePointer
    private let aes128CTR: OpaquePointer
    /// Set up for AES-128-ECB without padding once: each RPIK then only sets its key schedule
    /// (naming the cipher again would rebuild the provider's context, per key).
    private let ecb: OpaquePointer
    private let cipher: OpaquePointer

    /// PaddedData for the intervals being derived and the RPIs, kept between calls; most keys of
    /// a key file share a rolling start, so the padded data is rewritten only when it changes.
    private var paddedData = [UInt8]()
    private var paddedDataIntervals: (first: UInt32, count: Int) = (0, 0)
    private var identifiers = [UInt8]()

    private static let paddedDataPrefix = Array("EN-RPI".utf8) + [UInt8](repeating: 0, count: 6)

    public init() throws {
        guard let ecb = EVP_CIPHER_fetch(nil, "AES-128-ECB", nil) else { throw CryptoError.failure("EVP_CIPHER_fetch(AES-128-ECB)") }
        guard let ctr = EVP_CIPHER_fetch(nil, "AES-128-CTR", nil) else {
            EVP_CIPHER_free(ecb)
            throw CryptoError.failure("EVP_CIPHER_fetch(AES-128-CTR)")
        }
        guard let cipherContext = EVP_CIPHER_CTX_new(), let ecbContext = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_free(ctr); EVP_CIPHER_free(ecb)
            throw CryptoError.failure("EVP_CIPHER_CTX_new")
        }
        aes128ECB = ecb
        aes128CTR = ctr
        cipher = cipherContext
        self.ecb = ecbContext
        guard EVP_EncryptInit_ex2(ecbContext, ecb, nil, nil, nil) == 1, EVP_CIPHER_CTX_set_padding(ecbContext, 0) == 1 else {
            throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-ECB)")
        }
    }

    deinit {
        EVP_CIPHER_CTX_free(ecb)
        EVP_CIPHER_CTX_free(cipher)
        EVP_CIPHER_free(aes128CTR)
        EVP_CIPHER_free(aes128ECB)
    }

    /// A new TEK from OpenSSL's CSPRNG.
    public static func generateTemporaryExposureKey() throws -> TemporaryExposureKeyData {
        var key = [UInt8](repeating: 0, count: 16)
        guard RAND_priv_bytes(&key, 16) == 1 else { throw CryptoError.failure("RAND_priv_bytes") }
        return TemporaryExposureKeyData(bytes: key)!
    }

    /// RPIK = HKDF-SHA256(TEK, empty salt, "EN-RPIK", 16).
    public func rollingProximityIdentifierKey(for tek: TemporaryExposureKeyData) -> Bytes16 {
        hkdf.derive(tek, info: rpikInfo)
    }

    /// AEMK = HKDF-SHA256(TEK, empty salt, "EN-AEMK", 16).
    public func associatedEncryptedMetadataKey(for tek: TemporaryExposureKeyData) -> Bytes16 {
        hkdf.derive(tek, info: aemkInfo)
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
        if paddedData.count < count * 16 {
            paddedData = (0..<count).flatMap { _ in Self.paddedDataPrefix + [0, 0, 0, 0] }
            identifiers = [UInt8](repeating: 0, count: count * 16)
            paddedDataIntervals = (0, 0)
        }
        if paddedDataIntervals.first != first.rawValue || paddedDataIntervals.count < count {
            paddedData.withUnsafeMutableBytes { padded in
                for index in 0..<count {
                    let interval = first.rawValue &+ UInt32(truncatingIfNeeded: index)
                    padded.storeBytes(of: interval.littleEndian, toByteOffset: index * 16 + 12, as: UInt32.self)
                }
            }
            paddedDataIntervals = (first.rawValue, count)
        }
        try rpik.withUnsafeBytes { key in
            guard EVP_EncryptInit_ex2(ecb, nil, key.baseAddress, nil, nil) == 1
            else { throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-ECB)") }
            var written: Int32 = 0
            guard count == 0 || EVP_EncryptUpdate(ecb, &identifiers, &written, paddedData, Int32(count * 16)) == 1
            else { throw CryptoError.failure("EVP_EncryptUpdate(AES-128-ECB)") }
        }
        return try identifiers.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0.prefix(count * 16))) }
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
}
