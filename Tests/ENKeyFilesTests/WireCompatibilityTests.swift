import ENArchive
import ENCore
@testable import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import Testing

/// What the key export code wrote and read while SwiftProtobuf did its protobuf, committed in
/// Fixtures/ (README there), so that the wire code replacing it is held to the same bytes and fields.
@Suite struct WireCompatibilityTests {
    /// Keys that cover each field's range: every report type, onsets absent, negative (ZigZag),
    /// zero and positive, short and full rolling periods, every risk level.
    static let fixedKeys: [DiagnosisKey] = (0..<12).map { index in
        let onsets: [Int?] = [nil, -14, 0, 14, -1, 5]
        return DiagnosisKey(
            key: TemporaryExposureKey(keyData: Bytes16(bytes: (0..<16).map { UInt8((index * 16 + $0 * 7) & 0xff) })!,
                                      rollingStartIntervalNumber: ENIntervalNumber(2_700_000 + UInt32(index) * 144),
                                      rollingPeriod: [144, 1, 72, 143][index % 4], transmissionRiskLevel: index % 9),
            reportType: ReportType(rawValue: index % 6)!, daysSinceOnsetOfSymptoms: onsets[index % onsets.count])
    }

    static var signedWriter: KeyExportWriter {
        var writer = KeyExportWriter(region: "DE", startTimestamp: 1_600_000_000, endTimestamp: 1_600_086_400,
                                     signer: (try! P256PrivateKey(), SignatureInfo(keyId: "262", keyVersion: "v2")))
        writer.batchNumber = 2
        writer.batchSize = 3
        return writer
    }

    /// Stands in for an ECDSA signature, which is random: a DER SEQUENCE of 70 bytes.
    static let fixedSignature: [UInt8] = [0x30, 0x44] + (0..<68).map { UInt8($0) }

    @Test func exportBinIsTheBytesSwiftProtobufWrote() throws {
        #expect(try Self.signedWriter.exportBin(keys: Self.fixedKeys) == Fixture.data("writer-signed.export.bin"))
        let unsigned = KeyExportWriter(region: "", startTimestamp: 0, endTimestamp: 0)
        #expect(try unsigned.exportBin(keys: []) == Fixture.data("writer-unsigned-empty.export.bin"))
    }

    @Test func signatureListIsTheBytesSwiftProtobufWrote() throws {
        let list = Self.signedWriter.signatureList(signature: Self.fixedSignature, info: SignatureInfo(keyId: "262", keyVersion: "v2"))
        let recorded = try Fixture.data("writer-fixed-signature.export.sig")
        #expect(list == recorded)
    }

    @Test(arguments: ["en-server-example.zip", "en-internals-sample.zip", "legacy-signature-info-sample.zip", "en-internals-200-keys.export.bin"])
    func realFilesReadAsSwiftProtobufReadThem(file: String) throws {
        let recorded = try JSONDecoder().decode([String: ExportAsRead].self, from: try Fixture.data("export-files-as-read.json"))
        let export = try KeyExport(contentsOf: try Fixture.data(file))
        let asRead = try ExportAsRead(export)
        #expect(asRead == recorded[file])
        // The full reader, which the fast scanner leaves the unusual keys to, reads each key the same.
        var decoded = [String]()
        var exportBin = try Fixture.data(file)
        if file.hasSuffix(".zip") {
            let archive = try ZipArchive(exportBin, maximumEntries: 16)
            exportBin = try archive.extract(try #require(archive["export.bin"]), limit: 1 << 20)
        }
        try exportBin.withUnsafeBytes { bytes in
            var wire = ProtobufWire(bytes, in: KeyExport.header.count..<bytes.count)
            while let field = try wire.next() {
                guard field.number == 7 || field.number == 8, case .bytes(let range) = field.value else { continue }
                decoded.append(ExportAsRead.line(try KeyExport.decodedKey(Data(bytes[range])), isRevision: field.number == 8))
            }
        }
        #expect(decoded == recorded[file]?.keys)
    }
}

/// Everything `KeyExport` reads from a file, in a form JSON keeps and a failing test shows readably.
struct ExportAsRead: Codable, Equatable {
    struct Signature: Codable, Equatable {
        var keyId, keyVersion, algorithm: String
        var batchNumber, batchSize: Int
        var signature: String
    }

    var startTimestamp, endTimestamp: UInt64
    var region: String
    var batchNumber, batchSize: Int
    /// Key id, key version and algorithm of each, separated by "|".
    var signatureInfos: [String]
    var signatures: [Signature]?
    var keyCount, revisedKeyCount: Int
    /// One line per key, in file order (see `line`).
    var keys: [String]

    init(_ export: KeyExport) throws {
        (startTimestamp, endTimestamp, region) = (export.startTimestamp, export.endTimestamp, export.region)
        (batchNumber, batchSize) = (export.batchNumber, export.batchSize)
        signatureInfos = export.signatureInfos.map { "\($0.keyId)|\($0.keyVersion)|\($0.algorithm)" }
        signatures = export.signatures?.map {
            Signature(keyId: $0.info.keyId, keyVersion: $0.info.keyVersion, algorithm: $0.info.algorithm,
                      batchNumber: $0.batchNumber, batchSize: $0.batchSize, signature: $0.signature.hexString)
        }
        (keyCount, revisedKeyCount) = (export.keyCount, export.revisedKeyCount)
        var keys = [String]()
        try export.forEachKey { keys.append(Self.line($0, isRevision: $1)) }
        self.keys = keys
    }

    /// Key data, rolling start, rolling period, risk level, report type, onset (or "-"), and
    /// "revised" for a revised key.
    static func line(_ key: DiagnosisKey, isRevision: Bool) -> String {
        [key.key.keyData.hex, "\(key.key.rollingStartIntervalNumber.rawValue)", "\(key.key.rollingPeriod)",
         "\(key.key.transmissionRiskLevel)", "\(key.reportType.rawValue)", key.daysSinceOnsetOfSymptoms.map { "\($0)" } ?? "-",
         isRevision ? "revised" : "key"].joined(separator: " ")
    }
}
