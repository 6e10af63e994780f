import CENOpenSSL

/// The EN derivations (protocol.md §1) on OpenSSL, holding its contexts for reuse.
///
/// Creating the contexts costs far more than one derivation, so a caller that derives many keys
/// keeps one instance. An instance is not thread-safe: use one per thread or task.
public final class ExposureCrypto {
    private let hkdf = HKDF()
    private let rpikInfo = HKDF.Info(label: "EN-RPIK")
    private let aemkInfo = HKDF.Info(label: "EN-AEMK")
    /// Set up for AES-128-ECB once: each RPIK then only sets its key schedule (naming the
    /// cipher again would rebuild the provider's context, per key). Padding stays on: it only
    /// matters to EVP_EncryptFinal, never called, and OpenSSL 3 applies a padding of 0 again on
    /// every init, a parameter looked up by name per key.
    private let ecb: OpaquePointer
    /// Set up for AES-128-CTR once, for the same reason: each AEM sets only its key and counter.
    private let ctr: OpaquePointer
    /// PaddedData for the intervals being derived and room for their RPIs, kept between calls;
    /// most keys of a key file share a rolling start, so the padded data is rewritten only when
    /// it changes. Read into a local once per key: each use of a class's stored property is
    /// checked for exclusive access.
    private var intervals: IntervalBlocks

    public init() throws {
        ecb = try Self.encryptionContext("AES-128-ECB")
        do {
            ctr = try Self.encryptionContext("AES-128-CTR")
        } catch {
            EVP_CIPHER_CTX_free(ecb)
            throw error
        }
        intervals = IntervalBlocks(capacity: Int(ENIntervalNumber.tekRollingPeriod))
    }

    deinit {
        intervals.deallocate()
        EVP_CIPHER_CTX_free(ecb)
        EVP_CIPHER_CTX_free(ctr)
    }

    /// A context set up to encrypt with `algorithm`, its key and IV left to each use.
    private static func encryptionContext(_ algorithm: String) throws -> OpaquePointer {
        guard let cipher = EVP_CIPHER_fetch(nil, algorithm, nil) else { throw CryptoError.failure("EVP_CIPHER_fetch(\(algorithm))") }
        // The context holds a reference of its own.
        defer { EVP_CIPHER_free(cipher) }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError.failure("EVP_CIPHER_CTX_new") }
        guard EVP_EncryptInit_ex2(context, cipher, nil, nil, nil) == 1 else {
            EVP_CIPHER_CTX_free(context)
            throw CryptoError.failure("EVP_EncryptInit_ex2(\(algorithm))")
        }
        return context
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
        var identifiers = [RollingProximityIdentifier]()
        identifiers.reserveCapacity(count)
        try withRollingProximityIdentifiers(key: rpik, from: first, count: count) { blocks in
            for index in 0..<count { identifiers.append(Bytes16(blocks, offset: index * 16)) }
        }
        return identifiers
    }

    /// Derives the RPIs of `count` intervals into a buffer that `body` reads in place
    /// (16 bytes per interval): the allocation-free form for matchers. The buffer is this
    /// instance's: `body` must not derive with it.
    public func withRollingProximityIdentifiers<Result>(
        key rpik: Bytes16, from first: ENIntervalNumber, count: Int,
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        precondition(count >= 0, "count must not be negative")
        var intervals = self.intervals
        if !intervals.holdsPaddedData(from: first.rawValue, count: count) {
            intervals.writePaddedData(from: first.rawValue, count: count)
            self.intervals = intervals
        }
        guard rpik.withUnsafeBytes({ EVP_EncryptInit_ex2(ecb, nil, $0.baseAddress, nil, nil) }) == 1
        else { throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-ECB)") }
        var written: Int32 = 0
        guard count == 0 || EVP_EncryptUpdate(ecb, intervals.identifiers, &written, intervals.paddedData, Int32(count * 16)) == 1
        else { throw CryptoError.failure("EVP_EncryptUpdate(AES-128-ECB)") }
        return try body(UnsafeRawBufferPointer(start: intervals.identifiers, count: count * 16))
    }

    /// The RPI of one interval.
    public func rollingProximityIdentifier(key rpik: Bytes16, interval: ENIntervalNumber) throws -> RollingProximityIdentifier {
        try rollingProximityIdentifiers(key: rpik, from: interval, count: 1)[0]
    }

    /// AEM = AES-128-CTR(AEMK, counter block = RPI, metadata).
    public func encryptMetadata(_ metadata: Metadata, key aemk: Bytes16, rpi: RollingProximityIdentifier) throws -> AssociatedEncryptedMetadata {
        let plaintext = metadata.bytes.reduce(0) { $0 << 8 | UInt32($1) }
        return AssociatedEncryptedMetadata(rawValue: try aesCTR(plaintext, key: aemk, counter: rpi))
    }

    /// The inverse of `encryptMetadata`: CTR mode is its own inverse.
    public func decryptMetadata(_ aem: AssociatedEncryptedMetadata, key aemk: Bytes16, rpi: RollingProximityIdentifier) throws -> Metadata {
        let plaintext = try aesCTR(aem.rawValue, key: aemk, counter: rpi)
        return withUnsafeBytes(of: plaintext.bigEndian) { Metadata(bytes: $0)! }
    }

    /// The 4 bytes of `input` (byte 0 most significant) encrypted in CTR mode, without an array.
    private func aesCTR(_ input: UInt32, key: Bytes16, counter: Bytes16) throws -> UInt32 {
        var input = input.bigEndian, output: UInt32 = 0, written: Int32 = 0
        try key.withUnsafeBytes { keyBytes in
            try counter.withUnsafeBytes { counterBytes in
                guard EVP_EncryptInit_ex2(ctr, nil, keyBytes.baseAddress, counterBytes.baseAddress, nil) == 1
                else { throw CryptoError.failure("EVP_EncryptInit_ex2(AES-128-CTR)") }
            }
        }
        let updated = withUnsafeMutableBytes(of: &output) { outputBytes in
            withUnsafeBytes(of: &input) { inputBytes in
                EVP_EncryptUpdate(ctr, outputBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
                                  inputBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), 4)
            }
        }
        guard updated == 1 else { throw CryptoError.failure("EVP_EncryptUpdate(AES-128-CTR)") }
        return UInt32(bigEndian: output)
    }
}

/// PaddedData (protocol.md §1: "EN-RPI", six zero bytes, the interval number little-endian) for
/// consecutive intervals and room for as many RPIs, 16 bytes each, in one allocation that its
/// owner frees.
private struct IntervalBlocks {
    private let storage: UnsafeMutableRawPointer
    private let capacity: Int
    /// The intervals whose PaddedData `storage` holds.
    private var first: UInt32 = 0
    private var count = 0

    var paddedData: UnsafeMutablePointer<UInt8> { storage.assumingMemoryBound(to: UInt8.self) }
    var identifiers: UnsafeMutablePointer<UInt8> { paddedData + capacity * 16 }

    init(capacity: Int) {
        self.capacity = capacity
        // EVP_EncryptUpdate may write up to a block more than it is given.
        let byteCount = capacity * 32 + 16
        storage = .allocate(byteCount: byteCount, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        for index in 0..<capacity {
            (storage + index * 16).copyMemory(from: "EN-RPI", byteCount: 6)
        }
    }

    func deallocate() { storage.deallocate() }

    func holdsPaddedData(from first: UInt32, count: Int) -> Bool {
        first == self.first && count <= self.count
    }

    mutating func writePaddedData(from first: UInt32, count: Int) {
        if count > capacity {
            deallocate()
            self = IntervalBlocks(capacity: count)
        }
        for index in 0..<count {
            let interval = first &+ UInt32(truncatingIfNeeded: index)
            storage.storeBytes(of: interval.littleEndian, toByteOffset: index * 16 + 12, as: UInt32.self)
        }
        (self.first, self.count) = (first, count)
    }
}
