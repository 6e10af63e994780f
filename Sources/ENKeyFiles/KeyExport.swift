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

/// A diagnosis key export: export.bin (and export.sig when present), checked on reading.
///
/// The keys are not held decoded: `forEachKey` walks them one at a time, so a file with a
/// million keys costs its own size in memory and no more.
public struct KeyExport: Sendable {
    /// The 16 bytes every export.bin starts with.
    public static let header = Array("EK Export v1    ".utf8)

    public let exportBin: Data
    /// nil when the file has no export.sig.
    public let signatures: [ExportSignature]?
    public let startTimestamp: UInt64
    public let endTimestamp: UInt64
    public let region: String
    public let batchNumber: Int
    public let batchSize: Int
    public let signatureInfos: [SignatureInfo]
    public let keyCount: Int
    public let revisedKeyCount: Int

    /// Reads a key file: a zip archive with export.bin and export.sig, or a bare export.bin.
    public init(contentsOf file: Data, limits: KeyFileLimits = .standard) throws(KeyFileError) {
        guard file.count <= limits.maximumFileSize else { throw .tooLarge(bytes: file.count, limit: limits.maximumFileSize) }
        if file.starts(with: Self.header) {
            try self.init(exportBin: file, signatureList: nil)
        } else {
            let entries = try ZipEntries(file, limits: limits)
            try self.init(exportBin: try entries.read("export.bin"), signatureList: try entries.readIfPresent("export.sig"))
        }
    }

    /// Checks the header and every key of `exportBin`, and parses `signatureList` (export.sig).
    public init(exportBin: Data, signatureList: Data?) throws(KeyFileError) {
        guard exportBin.starts(with: Self.header) else { throw .badHeader }
        // Key ranges are offsets from 0: a slice is rebased once here.
        let exportBin = exportBin.startIndex == 0 ? exportBin : Data(exportBin)
        self.exportBin = exportBin
        signatures = try signatureList.map(Self.parseSignatures)
        var start: UInt64 = 0, end: UInt64 = 0, batchNumber = 0, batchSize = 0
        var region = "", infos = [SignatureInfo](), keys = 0, revised = 0
        try Self.withBytes(of: exportBin) { bytes throws(KeyFileError) in
            var wire = ProtobufWire(bytes, in: Self.firstFieldOffset..<bytes.count)
            do {
                while let field = try wire.next() {
                    switch field.number {
                    case 1: start = try field.fixed64("start_timestamp")
                    case 2: end = try field.fixed64("end_timestamp")
                    case 3: region = try field.string("region", in: bytes)
                    case 4: batchNumber = Int(try field.int32("batch_num"))
                    case 5: batchSize = Int(try field.int32("batch_size"))
                    case 6: infos.append(SignatureInfo(try field.message("signature_infos", in: bytes) as ExportProto.SignatureInfo))
                    case 7:
                        _ = try Self.decodeKey(in: bytes, try field.contents("keys"), index: keys)
                        keys += 1
                    case 8:
                        _ = try Self.decodeKey(in: bytes, try field.contents("revised_keys"), index: keys + revised)
                        revised += 1
                    default:
                        break  // Unknown fields from a newer format version are skipped.
                    }
                }
            } catch let error as KeyFileError {
                throw error
            } catch {
                throw .malformedExport("\(error)")
            }
        }
        startTimestamp = start
        endTimestamp = end
        self.region = region
        self.batchNumber = batchNumber
        self.batchSize = batchSize
        signatureInfos = infos
        keyCount = keys
        revisedKeyCount = revised
    }

    /// A key still in its protobuf encoding: walking a file hands these out cheaply, and
    /// `decode()` can then run on any thread.
    public struct EncodedKey: Sendable {
        /// The whole export.bin (shared, not copied) and where in it the key is.
        let exportBin: Data
        let range: Range<Int>
        /// From the revised_keys field: a change to a key published earlier.
        public let isRevision: Bool

        /// The key; it was checked when the file was read, so decoding cannot fail.
        public func decode() -> DiagnosisKey {
            exportBin.withUnsafeBytes { try! KeyExport.decodeKey(in: $0, range, index: 0) }
        }
    }

    /// Calls `body` with each key, in file order, still encoded; rethrows what `body` throws
    /// (the file itself was checked when it was read).
    public func forEachEncodedKey(_ body: (EncodedKey) throws -> Void) throws {
        try exportBin.withUnsafeBytes { bytes in
            var wire = ProtobufWire(bytes, in: Self.firstFieldOffset..<bytes.count)
            while let field = try! wire.next() {
                if let key = encodedKey(field) { try body(key) }
            }
        }
    }

    /// Where `encodedKeys(from:limit:into:)` starts: the first field after the header.
    public static let firstFieldOffset = header.count

    /// Appends up to `limit` keys from the field at byte `offset` on, in file order, and returns
    /// where the next call goes on (nil at the end of the file). Lets several threads take keys
    /// from one file a batch at a time.
    public func encodedKeys(from offset: Int, limit: Int, into batch: inout [EncodedKey]) -> Int? {
        exportBin.withUnsafeBytes { bytes in
            var wire = ProtobufWire(bytes, in: offset..<bytes.count)
            var taken = 0
            // The file was walked whole when it was read, so walking it again cannot fail.
            while taken < limit, let field = try! wire.next() {
                guard let key = encodedKey(field) else { continue }
                batch.append(key)
                taken += 1
            }
            return wire.offset < bytes.count ? wire.offset : nil
        }
    }

    /// The key a keys or revised_keys field holds; nil for any other field.
    private func encodedKey(_ field: ProtobufField) -> EncodedKey? {
        guard field.number == 7 || field.number == 8, case .bytes(let range) = field.value else { return nil }
        return EncodedKey(exportBin: exportBin, range: range, isRevision: field.number == 8)
    }

    /// Calls `body` with each key and whether it is a revision of an earlier one.
    public func forEachKey(_ body: (_ key: DiagnosisKey, _ isRevision: Bool) throws -> Void) throws {
        try forEachEncodedKey { try body($0.decode(), $0.isRevision) }
    }

    /// `body` with the bytes of `data` in place, keeping its typed error (`withUnsafeBytes` only rethrows).
    private static func withBytes<Value>(of data: Data, _ body: (UnsafeRawBufferPointer) throws(KeyFileError) -> Value) throws(KeyFileError) -> Value {
        let outcome = data.withUnsafeBytes { bytes -> Result<Value, KeyFileError> in
            do throws(KeyFileError) { return .success(try body(bytes)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }

    /// Decodes and checks the key at `range` of `exportBin`, read in place (no copy of the bytes).
    private static func decodeKey(in exportBin: UnsafeRawBufferPointer, _ range: Range<Int>, index: Int) throws(KeyFileError) -> DiagnosisKey {
        if let scanned = scannedKey(UnsafeRawBufferPointer(rebasing: exportBin[range])) { return scanned }
        return try decodedKey(in: exportBin, range, index: index)
    }

    /// A TemporaryExposureKey message decoded in full and checked; a refusal names the key by its
    /// `index` in the file, and what is wrong.
    public static func decodedKey(_ message: Data, index: Int = 0) throws(KeyFileError) -> DiagnosisKey {
        try withBytes(of: message) { bytes throws(KeyFileError) in try decodedKey(in: bytes, 0..<bytes.count, index: index) }
    }

    private static func decodedKey(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>, index: Int) throws(KeyFileError) -> DiagnosisKey {
        let message: ExportProto.TemporaryExposureKey
        do { message = try ExportProto.TemporaryExposureKey(bytes, in: range) } catch {
            throw .invalidKey(index: index, reason: "not a TemporaryExposureKey message (\(error))")
        }
        return try diagnosisKey(message, index: index)
    }

    /// A TemporaryExposureKey message read in place, or nil when it is not a valid key in the
    /// plain form servers write (each field once, in range, no unknown field), so that
    /// `decodedKey` decides and words the refusal. A million keys are read twice per file (checked,
    /// then matched), so this skips what the full reader spends on the unusual (repeats, unknown
    /// fields, errors worded). The fuzzer checks that the two agree.
    public static func scannedKey(_ message: UnsafeRawBufferPointer) -> DiagnosisKey? {
        var wire = ProtobufWire(message)
        var keyData: Bytes16?, risk: UInt64?, start: UInt64?, period: UInt64?, reportType: UInt64?, onset: UInt64?
        while true {
            let next: ProtobufField?
            do { next = try wire.next() } catch { return nil }
            guard let field = next else { break }
            switch (field.number, field.value) {
            case (1, .bytes(let range)) where keyData == nil && range.count == 16:
                keyData = Bytes16(message, offset: range.lowerBound)
            case (2, .varint(let value)) where risk == nil && value <= 8: risk = value
            case (3, .varint(let value)) where start == nil && value <= UInt64(Int32.max): start = value
            case (4, .varint(let value)) where period == nil && (1...144).contains(value): period = value
            case (5, .varint(let value)) where reportType == nil && value <= UInt64(ReportType.revoked.rawValue): reportType = value
            case (6, .varint(let value)) where onset == nil && value <= UInt64(UInt32.max): onset = value
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

    private static func parseSignatures(_ data: Data) throws(KeyFileError) -> [ExportSignature] {
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
