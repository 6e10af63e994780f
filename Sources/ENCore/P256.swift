import CENOpenSSL

/// Why a P-256 key was refused.
public enum P256KeyError: Error, Equatable, CustomStringConvertible {
    case unreadablePublicKey
    case unreadablePrivateKey
    case notP256(String)

    public var description: String {
        switch self {
        case .unreadablePublicKey:
            return "not a public key: expected a PEM \"PUBLIC KEY\" block or a DER SubjectPublicKeyInfo"
        case .unreadablePrivateKey:
            return "not a private key: expected an unencrypted PEM private key"
        case .notP256(let kind):
            return "the key is \(kind), not an ECDSA P-256 key"
        }
    }
}

/// An ECDSA P-256 public key: verifies export file signatures (SHA-256, DER signatures).
/// Sendable by hand: the EVP_PKEY is never changed after init, and OpenSSL 3 lets several
/// threads verify with one key at once.
public final class P256PublicKey: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent use of a key for verification.
    let key: OpaquePointer

    /// From a PEM `PUBLIC KEY` block.
    public convenience init(pem: String) throws(P256KeyError) {
        let key = pem.withCString { text in
            withMemoryBIO(text, count: strlen(text)) { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
        }
        guard let key else { ERR_clear_error(); throw .unreadablePublicKey }
        try self.init(owning: key)
    }

    /// From the DER bytes of a SubjectPublicKeyInfo (what a base64 key string holds).
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws(P256KeyError) {
        let key = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { ERR_clear_error(); throw .unreadablePublicKey }
        try self.init(owning: key)
    }

    fileprivate init(owning key: OpaquePointer) throws(P256KeyError) {
        self.key = key
        try requireP256(key)
    }

    deinit { EVP_PKEY_free(key) }

    /// Whether `signature` (ASN.1 DER) is this key's ECDSA-SHA256 signature of `message`.
    /// Malformed signatures are simply invalid.
    public func isValidSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context); ERR_clear_error() }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count,
                                message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count) == 1
    }

    /// Whether `signature` (ASN.1 DER) is this key's ECDSA signature of a message whose SHA-256 is
    /// `digest`: the same check as `isValidSignature(_:for:)`, for a message hashed as it streamed by.
    public func isValidSignature(_ signature: [UInt8], forSHA256 digest: [UInt8]) -> Bool {
        guard digest.count == 32, let context = EVP_PKEY_CTX_new(key, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context); ERR_clear_error() }
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, EVP_sha256()) == 1 else { return false }
        return EVP_PKEY_verify(context, signature, signature.count, digest, digest.count) == 1
    }

    /// The DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] { derSubjectPublicKeyInfo(of: key) }

    public var pem: String { pemText { PEM_write_bio_PUBKEY($0, key) } }
}

/// An ECDSA P-256 private key: signs export files (for tests, and for exporting the device's keys).
/// Sendable by hand: never changed after init, as `P256PublicKey`.
public final class P256PrivateKey: @unchecked Sendable {
    let key: OpaquePointer

    /// A fresh key from OpenSSL's CSPRNG.
    public init() throws {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.failure("EVP_PKEY_CTX_new_from_name(EC)") }
        defer { EVP_PKEY_CTX_free(context) }
        var generated: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
              EVP_PKEY_generate(context, &generated) == 1, let generated
        else { throw CryptoError.failure("EVP_PKEY_generate(P-256)") }
        key = generated
    }

    /// From an unencrypted PEM private key (PKCS#8 or SEC1 "EC PRIVATE KEY").
    public init(pem: String) throws(P256KeyError) {
        let key = pem.withCString { text in
            withMemoryBIO(text, count: strlen(text)) { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
        }
        guard let key else { ERR_clear_error(); throw .unreadablePrivateKey }
        self.key = key
        try requireP256(key)
    }

    deinit { EVP_PKEY_free(key) }

    /// The ASN.1 DER ECDSA signature of SHA-256(`message`).
    public func signature(for message: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.failure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        let bytes = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, nil, &length, bytes, message.count) == 1
        else { throw CryptoError.failure("EVP_DigestSign") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, bytes, message.count) == 1 else { throw CryptoError.failure("EVP_DigestSign") }
        return Array(signature.prefix(length))
    }

    public var publicKey: P256PublicKey {
        try! P256PublicKey(subjectPublicKeyInfo: derSubjectPublicKeyInfo(of: key))
    }

    /// PKCS#8 PEM.
    public var pem: String { pemText { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) } }
}

private func derSubjectPublicKeyInfo(of key: OpaquePointer) -> [UInt8] {
    var buffer: UnsafeMutablePointer<UInt8>?
    let length = i2d_PUBKEY(key, &buffer)
    defer { CRYPTO_free(buffer, #fileID, #line) }
    return length > 0 ? Array(UnsafeBufferPointer(start: buffer, count: Int(length))) : []
}

private func requireP256(_ key: OpaquePointer) throws(P256KeyError) {
    var name = [CChar](repeating: 0, count: 64)
    var length = 0
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
        throw .notP256(String(cString: OBJ_nid2sn(EVP_PKEY_get_base_id(key))))
    }
    guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { throw .notP256("an EC key of unknown curve") }
    let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard curve == "prime256v1" || curve == "P-256" else { throw .notP256("on curve \(curve)") }
}

private func withMemoryBIO<Result>(_ bytes: UnsafePointer<CChar>, count: Int, _ body: (OpaquePointer) -> Result?) -> Result? {
    guard let bio = BIO_new_mem_buf(bytes, Int32(count)) else { return nil }
    defer { BIO_free(bio) }
    return body(bio)
}

private func pemText(_ write: (OpaquePointer) -> Int32) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { return "" }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { return "" }
    var text = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
    let count = BIO_read(bio, &text, Int32(text.count))
    return String(decoding: text.prefix(max(0, Int(count))), as: UTF8.self)
}
