import ENCore
import Foundation
import SwiftProtobuf

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
        // Key ranges are offsets from 0 (RawSpan counts so): a slice is rebased once here.
        let exportBin = exportBin.startIndex == 0 ? exportBin : Data(exportBin)
        self.exportBin = exportBin
        signatures = try signatureList.map(Self.parseSignatures)
        var start: UInt64 = 0, end: UInt64 = 0, batchNumber = 0, batchSize = 0
        var region = "", infos = [SignatureInfo](), keys = 0, revised = 0
        do {
            try Self.walk(exportBin) { field, value in
                switch (field, value) {
                case (1, .fixed64(let value)): start = value
                case (2, .fixed64(let value)): end = value
                case (3, .bytes(let range)):
                    guard let text = String(bytes: exportBin[range], encoding: .utf8) else { throw KeyFileError.malformedExport("region is not UTF-8") }
                    region = text
                case (4, .varint(let value)): batchNumber = Int(Int32(truncatingIfNeeded: value))
                case (5, .varint(let value)): batchSize = Int(Int32(truncatingIfNeeded: value))
                case (6, .bytes(let range)):
                    infos.append(SignatureInfo(try ExportProtoSignatureInfo(serializedBytes: exportBin[range])))
                case (7, .bytes(let range)):
                    _ = try Self.decodeKey(in: exportBin, range, index: keys)
                    keys += 1
                case (8, .bytes(let range)):
                    _ = try Self.decodeKey(in: exportBin, range, index: keys + revised)
                    revised += 1
                case (1...8, _):
                    throw KeyFileError.malformedExport("field \(field) has the wrong wire type")
                default:
                    break  // Unknown fields from a newer format version are skipped.
                }
            }
        } catch let error as KeyFileError {
            throw error
        } catch {
            throw .malformedExport("\(error)")
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
            try! KeyExport.decodeKey(in: exportBin, range, index: 0)
        }
    }

    /// Calls `body` with each key, in file order, still encoded; rethrows what `body` throws
    /// (the file itself was checked when it was read).
    public func forEachEncodedKey(_ body: (EncodedKey) throws -> Void) throws {
        try Self.walk(exportBin) { field, value in
            guard field == 7 || field == 8, case .bytes(let range) = value else { return }
            try body(EncodedKey(exportBin: exportBin, range: range, isRevision: field == 8))
        }
    }

    /// Where `encodedKeys(from:limit:into:)` starts: the first field after the header.
    public static let firstFieldOffset = header.count

    /// Appends up to `limit` keys from the field at byte `offset` on, in file order, and returns
    /// where the next call goes on (nil at the end of the file). Lets several threads take keys
    /// from one file a batch at a time.
    public func encodedKeys(from offset: Int, limit: Int, into batch: inout [EncodedKey]) -> Int? {
        exportBin.withUnsafeBytes { bytes in
            var wire = ProtobufWire(bytes, from: offset)
            var taken = 0
            // The file was walked whole when it was read, so walking it again cannot fail.
            while taken < limit, let (field, value) = try! wire.next() {
                guard field == 7 || field == 8, case .bytes(let range) = value else { continue }
                batch.append(EncodedKey(exportBin: exportBin, range: range, isRevision: field == 8))
                taken += 1
            }
            return wire.offset < bytes.count ? wire.offset : nil
        }
    }

    /// Calls `body` with each key and whether it is a revision of an earlier one.
    public func forEachKey(_ body: (_ key: DiagnosisKey, _ isRevision: Bool) throws -> Void) throws {
        try forEachEncodedKey { try body($0.decode(), $0.isRevision) }
    }

    private static func walk(_ exportBin: Data, _ visit: (Int, ProtobufWire.Value) throws -> Void) throws {
        try exportBin.withUnsafeBytes { bytes in
            var wire = ProtobufWire(bytes, from: header.count)
            do {
                while let (field, value) = try wire.next() {
                    let base = exportBin.startIndex
                    if case .bytes(let range) = value {
                        try visit(field, .bytes(base + range.lowerBound..<base + range.upperBound))
                    } else {
                        try visit(field, value)
                    }
                }
            } catch let malformed as ProtobufWire.Malformed {
                throw KeyFileError.malformedExport(malformed.reason)
            }
        }
    }

    /// Decodes and checks the key at `range` of `exportBin`, read in place (no copy of the bytes).
    private static func decodeKey(in exportBin: Data, _ range: Range<Int>, index: Int) throws(KeyFileError) -> DiagnosisKey {
        let scanned = exportBin.withUnsafeBytes { scannedKey(UnsafeRawBufferPointer(rebasing: $0[range])) }
        if let scanned { return scanned }
        return try decodedKey(exportBin[range], index: index)
    }

    /// A TemporaryExposureKey message decoded by SwiftProtobuf and checked; a refusal names the
    /// key by its `index` in the file.
    public static func decodedKey(_ message: Data, index: Int = 0) throws(KeyFileError) -> DiagnosisKey {
        let decoded: ExportProtoTemporaryExposureKey
        do { decoded = try ExportProtoTemporaryExposureKey(serializedBytes: message) } catch {
            throw .invalidKey(index: index, reason: "not a TemporaryExposureKey message (\(error))")
        }
        do { return try diagnosisKey(decoded, index: index) } catch let error as KeyFileError { throw error } catch {
            throw .invalidKey(index: index, reason: "\(error)")
        }
    }

    /// A TemporaryExposureKey message read in place, or nil when it is not a valid key in the
    /// plain form servers write (each field once, in range, no unknown field), so that
    /// `decodedKey` decides and words the refusal. A million keys are read twice per file (checked,
    /// then matched); this costs a tenth of SwiftProtobuf's decoding. The fuzzer checks that
    /// the two agree.
    public static func scannedKey(_ message: UnsafeRawBufferPointer) -> DiagnosisKey? {
        var wire = ProtobufWire(message)
        var keyData: Bytes16?, risk: UInt64?, start: UInt64?, period: UInt64?, reportType: UInt64?, onset: UInt64?
        while true {
            let next: (field: Int, value: ProtobufWire.Value)?
            do { next = try wire.next() } catch { return nil }
            guard let (field, value) = next else { break }
            switch (field, value) {
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
            // sint32: ZigZag.
            daysSinceOnsetOfSymptoms: onset.map { Int(Int32(truncatingIfNeeded: $0 >> 1) ^ -Int32(truncatingIfNeeded: $0 & 1)) })
    }

    private static func diagnosisKey(_ message: ExportProtoTemporaryExposureKey, index: Int) throws -> DiagnosisKey {
        guard let keyData = Bytes16(bytes: message.keyData) else {
            throw KeyFileError.invalidKey(index: index, reason: "key data is \(message.keyData.count) bytes, not 16")
        }
        guard message.hasRollingStartIntervalNumber, message.rollingStartIntervalNumber >= 0 else {
            throw KeyFileError.invalidKey(index: index, reason: message.hasRollingStartIntervalNumber
                ? "rolling start interval number \(message.rollingStartIntervalNumber) is negative" : "it has no rolling start interval number")
        }
        guard (1...144).contains(message.rollingPeriod) else {
            throw KeyFileError.invalidKey(index: index, reason: "rolling period \(message.rollingPeriod) is outside 1...144")
        }
        guard (0...8).contains(message.transmissionRiskLevel) else {
            throw KeyFileError.invalidKey(index: index, reason: "transmission risk level \(message.transmissionRiskLevel) is outside 0...8")
        }
        return DiagnosisKey(
            key: TemporaryExposureKey(keyData: keyData,
                                      rollingStartIntervalNumber: ENIntervalNumber(UInt32(message.rollingStartIntervalNumber)),
                                      rollingPeriod: UInt32(message.rollingPeriod),
                                      transmissionRiskLevel: Int(message.transmissionRiskLevel)),
            reportType: ReportType(rawValue: message.reportType.rawValue) ?? .unknown,
            daysSinceOnsetOfSymptoms: message.hasDaysSinceOnsetOfSymptoms ? Int(message.daysSinceOnsetOfSymptoms) : nil)
    }

    /// Signatures one export.sig may carry: one per signing key, and servers sign with one or
    /// two. Each is a P-256 verification, so a file with thousands would buy a stranger CPU time.
    public static let maximumSignatures = 16

    private static func parseSignatures(_ data: Data) throws(KeyFileError) -> [ExportSignature] {
        let list: ExportProtoTEKSignatureList
        do { list = try ExportProtoTEKSignatureList(serializedBytes: data) } catch { throw .malformedSignatureList("\(error)") }
        guard list.signatures.count <= maximumSignatures else {
            throw .malformedSignatureList("\(list.signatures.count) signatures, more than \(maximumSignatures)")
        }
        return list.signatures.map { signature in
            ExportSignature(info: SignatureInfo(signature.signatureInfo), batchNumber: Int(signature.batchNum),
                            batchSize: Int(signature.batchSize), signature: Array(signature.signature))
        }
    }
}

extension SignatureInfo {
    init(_ message: ExportProtoSignatureInfo) {
        self.init(keyId: message.verificationKeyID, keyVersion: message.verificationKeyVersion, algorithm: message.signatureAlgorithm)
    }
}
