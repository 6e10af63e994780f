import ENArchive
import ENCore
import FoundationEssentials

/// What a SignatureInfo says about the key that signed an export.
public struct SignatureInfo: Hashable, Sendable {
    public var keyId: String
    public var keyVersion: String
    public var algorithm: String

    public init(keyId: String, keyVersion: String, algorithm: String = SignatureInfo.ecdsaP256SHA256) {
        self.keyId = keyId
        self.keyVersion = keyVersion
        self.algorithm = algorithm
    }

    /// The OID of ECDSA with SHA-256, the only algorithm the format uses.
    public static let ecdsaP256SHA256 = "1.2.840.10045.4.3.2"

    /// The OID, or an early-2020 file's text name of the same algorithm (or none at all).
    var isECDSAP256SHA256: Bool {
        let name = algorithm.lowercased().filter { $0.isLetter || $0.isNumber || $0 == "." }
        return algorithm == Self.ecdsaP256SHA256 || algorithm.isEmpty || (name.contains("ecdsa") && name.contains("p256") && name.contains("sha256"))
    }
}

/// One signature from export.sig.
public struct ExportSignature: Sendable {
    public var info: SignatureInfo
    public var batchNumber: Int
    public var batchSize: Int
    /// ASN.1 DER ECDSA signature over the whole export.bin.
    public var signature: [UInt8]
}

/// What a key file held besides its keys, known once it was read to its end (`KeyFileStream`).
public struct KeyFileSummary: Sendable {
    public var startTimestamp: UInt64 = 0
    public var endTimestamp: UInt64 = 0
    public var region = ""
    public var batchNumber = 0
    public var batchSize = 0
    public var signatureInfos = [SignatureInfo]()
    public var keyCount = 0
    public var revisedKeyCount = 0
    /// SHA-256 of export.bin, which export.sig's signatures sign.
    public var exportBinSHA256 = [UInt8]()
    /// export.sig's signatures (read when the file was opened); nil when the file has none.
    public var signatures: [ExportSignature]?
}

/// A diagnosis key export read whole and checked: what `enctl keys inspect` and `keys sign`, the
/// fuzzer and the tests look at. A detection streams its files instead (`KeyFileStream`); this
/// reads through the same stream, keeping the file's bytes (not its keys) to walk them again.
@dynamicMemberLookup
public struct KeyExport: Sendable {
    /// The 16 bytes every export.bin starts with.
    public static let header = Array("EK Export v1    ".utf8)

    public let summary: KeyFileSummary
    /// How to read the file again.
    private let open: @Sendable () throws(KeyFileError) -> KeyFileStream

    public subscript<Value>(dynamicMember field: KeyPath<KeyFileSummary, Value>) -> Value { summary[keyPath: field] }

    /// Reads a key file: a zip archive with export.bin and export.sig, or a bare export.bin.
    public init(contentsOf file: Data, limits: KeyFileLimits = .standard) throws(KeyFileError) {
        let contents = KeyFileContents(file)
        try self.init { () throws(KeyFileError) in try KeyFileStream(contents, limits: limits) }
    }

    /// Checks the header and every key of `exportBin`, and parses `signatureList` (export.sig).
    public init(exportBin: Data, signatureList: Data?) throws(KeyFileError) {
        try self.init { () throws(KeyFileError) in try KeyFileStream(exportBin: exportBin, signatureList: signatureList) }
    }

    private init(open: @escaping @Sendable () throws(KeyFileError) -> KeyFileStream) throws(KeyFileError) {
        let stream = try open()
        while try stream.next() != nil {}
        (summary, self.open) = (stream.summary, open)
    }

    /// Calls `body` with each key, in file order, and whether it is a revision of an earlier one
    /// (from revised_keys); rethrows what `body` throws (the file itself was checked when it was read).
    public func forEachKey(_ body: (_ key: DiagnosisKey, _ isRevision: Bool) throws -> Void) throws {
        let stream = try open()
        while let (key, isRevision) = try stream.next() { try body(key, isRevision) }
    }

    /// The file as a stream again, for a detection (`ExposureDetector.File`).
    public func stream() throws(KeyFileError) -> KeyFileStream { try open() }

    /// Decodes and checks the key at `range` of `bytes`, read in place (no copy of the bytes);
    /// `bytes` start at byte `origin` of export.bin, which a refusal's offsets count from.
    static func decodeKey(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>, index: Int, origin: Int = 0) throws(KeyFileError) -> DiagnosisKey {
        if let scanned = scannedKey(UnsafeRawBufferPointer(rebasing: bytes[range])) { return scanned }
        return try decodedKey(in: bytes, range, index: index, origin: origin)
    }

    /// A TemporaryExposureKey message decoded in full and checked; a refusal names the key by its
    /// `index` in the file, and what is wrong.
    public static func decodedKey(_ message: Data, index: Int = 0) throws(KeyFileError) -> DiagnosisKey {
        try message.withBytes { bytes throws(KeyFileError) in try decodedKey(in: bytes, 0..<bytes.count, index: index, origin: 0) }
    }

    private static func decodedKey(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>, index: Int, origin: Int) throws(KeyFileError) -> DiagnosisKey {
        let message: ExportProto.TemporaryExposureKey
        do { message = try ExportProto.TemporaryExposureKey(bytes, in: range) } catch {
            throw .invalidKey(index: index, reason: "not a TemporaryExposureKey message (\(error.moved(by: origin)))")
        }
        return try diagnosisKey(message, index: index)
    }

    /// A TemporaryExposureKey message read in place, or nil when it is not a valid key in the
    /// plain form servers write (each field once, in range, no unknown field), so that
    /// `decodedKey` decides and words the refusal. A million keys are read twice per file (checked,
    /// then matched), so this skips what the full reader spends on the unusual (repeats, unknown
    /// fields, errors worded). The fuzzer checks that the two agree.
    public static func scannedKey(_ message: UnsafeRawBufferPointer) -> DiagnosisKey? {
        var keyData: Bytes16?, risk: UInt64?, start: UInt64?, period: UInt64?, reportType: UInt64?, onset: UInt64?
        var at = 0
        // Byte by byte, each field's one-byte tag: field number and wire type as servers write them.
        while at < message.count {
            let tag = message[at]
            at += 1
            switch tag {
            case 0x0A:  // 1, key_data: length 16 in one byte, then the bytes
                guard keyData == nil, message.count - at >= 17, message[at] == 16 else { return nil }
                keyData = Bytes16(message, offset: at + 1)
                at += 17
            case 0x10: guard risk == nil, let value = shortVarint(message, &at), value <= 8 else { return nil }; risk = value
            case 0x18: guard start == nil, let value = shortVarint(message, &at), value <= UInt64(Int32.max) else { return nil }; start = value
            case 0x20: guard period == nil, let value = shortVarint(message, &at), (1...144).contains(value) else { return nil }; period = value
            case 0x28:
                guard reportType == nil, let value = shortVarint(message, &at), value <= UInt64(ReportType.revoked.rawValue) else { return nil }
                reportType = value
            case 0x30: guard onset == nil, let value = shortVarint(message, &at), value <= UInt64(UInt32.max) else { return nil }; onset = value
            default: return nil
            }
        }
        guard let keyData, let start else { return nil }
        return DiagnosisKey(
            key: TemporaryExposureKey(keyData: keyData, rollingStartIntervalNumber: ENIntervalNumber(UInt32(start)),
                                      rollingPeriod: UInt32(period ?? 144), transmissionRiskLevel: Int(risk ?? 0)),
            reportType: ReportType(rawValue: Int(reportType ?? 0))!,
            daysSinceOnsetOfSymptoms: onset.map { Int(ProtobufField.sint32(zigZag: $0)) })
    }

    /// The varint at `at` in `message` when it takes at most five bytes (every value a key's
    /// fields may hold fits in 32 bits), moving `at` past it; nil for a longer one or one cut
    /// off, which `decodedKey` reads and judges.
    @inline(__always)
    private static func shortVarint(_ message: UnsafeRawBufferPointer, _ at: inout Int) -> UInt64? {
        var value: UInt64 = 0, shift: UInt64 = 0
        while at < message.count, shift < 35 {
            let byte = message[at]
            at += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    private static func diagnosisKey(_ message: ExportProto.TemporaryExposureKey, index: Int) throws(KeyFileError) -> DiagnosisKey {
        let keyBytes = message.keyData ?? []
        guard let keyData = Bytes16(bytes: keyBytes) else {
            throw .invalidKey(index: index, reason: "key data is \(keyBytes.count) bytes, not 16")
        }
        guard let start = message.rollingStartIntervalNumber else {
            throw .invalidKey(index: index, reason: "it has no rolling start interval number")
        }
        guard start >= 0 else { throw .invalidKey(index: index, reason: "rolling start interval number \(start) is negative") }
        let period = message.rollingPeriod ?? Int32(ENIntervalNumber.tekRollingPeriod)
        guard (1...144).contains(period) else {
            throw .invalidKey(index: index, reason: "rolling period \(period) is outside 1...144")
        }
        let risk = message.transmissionRiskLevel ?? 0
        guard (0...8).contains(risk) else {
            throw .invalidKey(index: index, reason: "transmission risk level \(risk) is outside 0...8")
        }
        return DiagnosisKey(
            key: TemporaryExposureKey(keyData: keyData, rollingStartIntervalNumber: ENIntervalNumber(UInt32(start)),
                                      rollingPeriod: UInt32(period), transmissionRiskLevel: Int(risk)),
            reportType: message.reportType ?? .unknown,
            daysSinceOnsetOfSymptoms: message.daysSinceOnsetOfSymptoms.map(Int.init))
    }

    /// Signatures one export.sig may carry: one per signing key, and servers sign with one or
    /// two. Each is a P-256 verification, so a file with thousands would buy a stranger CPU time.
    public static let maximumSignatures = 16

    static func parseSignatures(_ data: Data) throws(KeyFileError) -> [ExportSignature] {
        let list: ExportProto.TEKSignatureList
        do { list = try ExportProto.TEKSignatureList(serializedBytes: data) } catch { throw .malformedSignatureList(error.description) }
        guard list.signatures.count <= maximumSignatures else {
            throw .malformedSignatureList("\(list.signatures.count) signatures, more than \(maximumSignatures)")
        }
        return list.signatures.map { signature in
            ExportSignature(info: SignatureInfo(signature.signatureInfo ?? ExportProto.SignatureInfo()),
                            batchNumber: Int(signature.batchNumber ?? 0), batchSize: Int(signature.batchSize ?? 0),
                            signature: signature.signature ?? [])
        }
    }
}

extension SignatureInfo {
    package init(_ message: ExportProto.SignatureInfo) {
        self.init(keyId: message.verificationKeyId ?? "", keyVersion: message.verificationKeyVersion ?? "",
                  algorithm: message.signatureAlgorithm ?? "")
    }
}
