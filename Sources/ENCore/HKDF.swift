import CENOpenSSL

/// HKDF-SHA256 with an empty salt, a 7-byte EN label as info and a 16-byte output, as the EN key
/// derivations use it, built on the SHA-256 compression function.
///
/// With a fixed (empty) salt the HMAC pads of the extract step are the same for every key, so
/// they are compressed once here; a derivation then costs six compressions and no allocation,
/// several times cheaper than going through EVP_MAC for every key. Each message is short enough
/// for one block, laid out as eight words; SHA-256's state is carried as its eight words, not
/// as a whole SHA256_CTX (112 bytes) copied around each compression.
struct HKDF {
    /// An EN label ("EN-RPIK", "EN-AEMK") followed by HKDF's counter byte 0x01: the whole
    /// message of the expand step, as one big-endian word.
    struct Info {
        let word: UInt64

        init(label: String) {
            let bytes = Array(label.utf8) + [0x01]
            precondition(bytes.count == 8, "an EN label is 7 bytes")
            word = bytes.reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    /// SHA-256's chaining value: `h`, the first field of SHA256_CTX.
    typealias State = SIMD8<UInt32>
    /// A 64-byte block as eight words, each in the byte order of the message.
    typealias Block = SIMD8<UInt64>

    private let initial: State
    private let extractInner: State
    private let extractOuter: State

    /// HMAC's inner and outer pads (0x36 and 0x5c bytes, XORed into its key's block), a word of each.
    private static let innerPad: UInt64 = 0x3636_3636_3636_3636
    private static let outerPad: UInt64 = 0x5c5c_5c5c_5c5c_5c5c
    /// SHA-256's padding after a message: the bit 1, as the first byte of a word.
    private static let endOfMessage: UInt64 = 0x80 << 56

    init() {
        var context = SHA256_CTX()
        SHA256_Init(&context)
        initial = withUnsafeBytes(of: context.h) { $0.loadUnaligned(as: State.self) }
        // HMAC's key is the salt: 32 zero bytes padded to a 64-byte block, XOR the pads.
        extractInner = Self.compressed(initial, Block(repeating: Self.innerPad))
        extractOuter = Self.compressed(initial, Block(repeating: Self.outerPad))
    }

    /// HKDF(IKM = `inputKey`, salt = empty, info = the label of `info`, L = 16).
    func derive(_ inputKey: Bytes16, info: Info) -> Bytes16 {
        let end = Self.endOfMessage
        // PRK = HMAC(salt, IKM): inner over 64 + 16 bytes, outer over 64 + 32 bytes.
        let inner = Self.compressed(extractInner, Self.block(inputKey.high, inputKey.low, end, 0, 0, 0, 0, 80 * 8))
        let (i0, i1, i2, i3) = Self.digestWords(inner)
        let (p0, p1, p2, p3) = Self.digestWords(Self.compressed(extractOuter, Self.block(i0, i1, i2, i3, end, 0, 0, 96 * 8)))

        // OKM = HMAC(PRK, info ‖ 0x01), first 16 bytes: the PRK (32 bytes) is HMAC's key.
        let key = Self.block(p0, p1, p2, p3, 0, 0, 0, 0)
        let expandInner = Self.compressed(initial, key ^ Block(repeating: Self.innerPad))
        let expandOuter = Self.compressed(initial, key ^ Block(repeating: Self.outerPad))
        let (e0, e1, e2, e3) = Self.digestWords(Self.compressed(expandInner, Self.block(info.word, end, 0, 0, 0, 0, 0, 72 * 8)))
        let (o0, o1, _, _) = Self.digestWords(Self.compressed(expandOuter, Self.block(e0, e1, e2, e3, end, 0, 0, 96 * 8)))
        return Bytes16(high: o0, low: o1)
    }

    /// A block of eight big-endian words.
    private static func block(_ w0: UInt64, _ w1: UInt64, _ w2: UInt64, _ w3: UInt64,
                              _ w4: UInt64, _ w5: UInt64, _ w6: UInt64, _ w7: UInt64) -> Block {
        Block(w0.bigEndian, w1.bigEndian, w2.bigEndian, w3.bigEndian, w4.bigEndian, w5.bigEndian, w6.bigEndian, w7.bigEndian)
    }

    /// The digest of `state` as four big-endian words.
    private static func digestWords(_ state: State) -> (UInt64, UInt64, UInt64, UInt64) {
        (UInt64(state[0]) << 32 | UInt64(state[1]), UInt64(state[2]) << 32 | UInt64(state[3]),
         UInt64(state[4]) << 32 | UInt64(state[5]), UInt64(state[6]) << 32 | UInt64(state[7]))
    }

    /// `state` with `block` compressed into it. Both are stored as vectors, 16 bytes at a time
    /// as SHA-256's code loads them: a load spanning smaller stores just made waits for them to
    /// reach the cache instead of taking their bytes on the way.
    private static func compressed(_ state: State, _ block: Block) -> State {
        var context = SHA256_CTX()
        var block = block
        return withUnsafeMutableBytes(of: &context) { context in
            context.storeBytes(of: state, as: State.self)
            withUnsafeBytes(of: &block) {
                SHA256_Transform(context.baseAddress!.assumingMemoryBound(to: SHA256_CTX.self), $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            return context.loadUnaligned(as: State.self)
        }
    }
}
