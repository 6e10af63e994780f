extension P256PublicKey {
    /// Whether `signature` in the JOSE form (32-byte r ‖ 32-byte s, as ES256 JWS use) is this
    /// key's ECDSA-SHA256 signature of `message`.
    public func isValidRawSignature(_ signature: [UInt8], for message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == 64 else { return false }
        return isValidSignature(Self.der(r: signature[0..<32], s: signature[32..<64]), for: message)
    }

    /// The DER SEQUENCE of the two INTEGERs: leading zeros dropped, a 0x00 added when the top bit is set.
    static func der(r: ArraySlice<UInt8>, s: ArraySlice<UInt8>) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }

    /// The key's point, x and y (32 bytes each), as a JWK gives it: a P-256 SubjectPublicKeyInfo
    /// ends with the uncompressed point 04 ‖ x ‖ y.
    public var point: (x: [UInt8], y: [UInt8]) {
        let point = subjectPublicKeyInfo.suffix(64)
        return (Array(point.prefix(32)), Array(point.suffix(32)))
    }

    /// An uncompressed P-256 point (x ‖ y, 32 bytes each), as a JWK gives it.
    public convenience init(x: [UInt8], y: [UInt8]) throws(P256KeyError) {
        guard x.count == 32, y.count == 32 else { throw .unreadablePublicKey }
        // SubjectPublicKeyInfo { id-ecPublicKey, prime256v1 } BIT STRING 04 ‖ x ‖ y
        let prefix: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86,
                               0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04]
        try self.init(subjectPublicKeyInfo: prefix + x + y)
    }
}

extension P256PrivateKey {
    /// The ECDSA-SHA256 signature of `message` in the JOSE form (32-byte r ‖ 32-byte s), as
    /// ES256 JWS carry it: for issuing SMART Health Cards in tests and fuzzers.
    public func rawSignature(for message: UnsafeRawBufferPointer) throws -> [UInt8] {
        let der = try signature(for: message)
        // SEQUENCE { INTEGER r, INTEGER s }; P-256 signatures are short enough for one-byte lengths.
        guard der.count > 8, der[0] == 0x30 else { throw CryptoError.failure("an unexpected DER signature") }
        var index = 2, raw = [UInt8]()
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { throw CryptoError.failure("an unexpected DER signature") }
            let length = Int(der[index + 1])
            guard index + 2 + length <= der.count else { throw CryptoError.failure("an unexpected DER signature") }
            let integer = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            guard integer.count <= 32 else { throw CryptoError.failure("an unexpected DER signature") }
            raw += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            index += 2 + length
        }
        return raw
    }
}
