import CENOpenSSL

/// HKDF-SHA256 with an empty salt and a 16-byte output, as the EN key derivations use it,
/// built on the SHA-256 compression function.
///
/// With a fixed (empty) salt the HMAC pads of the extract step are the same for every key, so
/// they are compressed once here; a derivation then costs six compressions and no allocation,
/// several times cheaper than going through EVP_MAC for every key.
struct HKDF {
    private var initial = SHA256_CTX()
    private var extractInner = SHA256_CTX()
    private var extractOuter = SHA256_CTX()

    init() {
        SHA256_Init(&initial)
        // HMAC's key is the salt: 32 zero bytes padded to a 64-byte block, XOR the pads.
        extractInner = Self.compressed(initial, [UInt8](repeating: 0x36, count: 64))
        extractOuter = Self.compressed(initial, [UInt8](repeating: 0x5c, count: 64))
    }

    /// HKDF(IKM = `inputKey`, salt = empty, info = `info`, L = 16); `info` is at most 55 bytes.
    func derive(_ inputKey: Bytes16, info: [UInt8]) -> Bytes16 {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { block in
            // PRK = HMAC(salt, IKM): inner over 64 + 16 bytes, outer over 64 + 32 bytes.
            inputKey.withUnsafeBytes { block.copyMemory(from: $0) }
            let inner = Self.finalBlock(block, messageLength: 16, totalLength: 80, from: extractInner)
            Self.store(inner, into: block)
            let pseudorandomKey = Self.finalBlock(block, messageLength: 32, totalLength: 96, from: extractOuter)

            // OKM = HMAC(PRK, info ‖ 0x01), first 16 bytes.
            Self.store(pseudorandomKey, into: block)
            for offset in 32..<64 { block[offset] = 0 }
            for offset in 0..<64 { block[offset] ^= 0x36 }
            let expandInner = Self.compressed(initial, UnsafeRawBufferPointer(block))
            for offset in 0..<64 { block[offset] ^= 0x36 ^ 0x5c }
            let expandOuter = Self.compressed(initial, UnsafeRawBufferPointer(block))
            info.withUnsafeBytes { block.copyMemory(from: $0) }
            block[info.count] = 0x01
            let innerDigest = Self.finalBlock(block, messageLength: info.count + 1, totalLength: 64 + info.count + 1, from: expandInner)
            Self.store(innerDigest, into: block)
            let okm = Self.finalBlock(block, messageLength: 32, totalLength: 96, from: expandOuter)
            return Self.store(okm, into: block)
        }
    }

    /// Pads the `messageLength` bytes at the start of `block` as SHA-256's last block of a
    /// `totalLength`-byte message and compresses it into `state`.
    private static func finalBlock(_ block: UnsafeMutableRawBufferPointer, messageLength: Int, totalLength: Int, from state: SHA256_CTX) -> SHA256_CTX {
        block[messageLength] = 0x80
        for offset in (messageLength + 1)..<56 { block[offset] = 0 }
        block.storeBytes(of: UInt64(totalLength * 8).bigEndian, toByteOffset: 56, as: UInt64.self)
        return compressed(state, UnsafeRawBufferPointer(block))
    }

    private static func compressed(_ state: SHA256_CTX, _ block: UnsafeRawBufferPointer) -> SHA256_CTX {
        var state = state
        SHA256_Transform(&state, block.baseAddress!.assumingMemoryBound(to: UInt8.self))
        return state
    }

    private static func compressed(_ state: SHA256_CTX, _ block: [UInt8]) -> SHA256_CTX {
        block.withUnsafeBytes { compressed(state, $0) }
    }

    /// Writes the state's digest (32 bytes, big-endian words) to the start of `block` and
    /// returns its first 16 bytes.
    @discardableResult
    private static func store(_ state: SHA256_CTX, into block: UnsafeMutableRawBufferPointer) -> Bytes16 {
        withUnsafeBytes(of: state.h) { words in
            for index in 0..<8 {
                block.storeBytes(of: words.load(fromByteOffset: index * 4, as: UInt32.self).bigEndian, toByteOffset: index * 4, as: UInt32.self)
            }
        }
        return Bytes16(UnsafeRawBufferPointer(block))
    }
}
