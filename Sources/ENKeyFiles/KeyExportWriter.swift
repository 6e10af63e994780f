import ENCore
import Foundation
import SwiftProtobuf
import ZIPFoundation

/// Writes key export files: for tests, and for publishing the device's own keys.
public struct KeyExportWriter {
    public var region: String
    public var startTimestamp: UInt64
    public var endTimestamp: UInt64
    public var batchNumber = 1
    public var batchSize = 1
    /// The key that signs export.bin, with the id and version a verifier looks it up by.
    public var signer: (key: P256PrivateKey, info: SignatureInfo)?

    public init(region: String, startTimestamp: UInt64, endTimestamp: UInt64, signer: (key: P256PrivateKey, info: SignatureInfo)? = nil) {
        self.region = region
        self.startTimestamp = startTimestamp
        self.endTimestamp = endTimestamp
        self.signer = signer
    }

    /// The header followed by the serialized TemporaryExposureKeyExport.
    public func exportBin(keys: [DiagnosisKey]) throws -> Data {
        var export = ExportProtoTemporaryExposureKeyExport()
        export.startTimestamp = startTimestamp
        export.endTimestamp = endTimestamp
        export.region = region
        export.batchNum = Int32(batchNumber)
        export.batchSize = Int32(batchSize)
        if let signer { export.signatureInfos = [ExportProtoSignatureInfo(signer.info)] }
        export.keys = keys.map(ExportProtoTemporaryExposureKey.init)
        return Data(KeyExport.header) + (try export.serializedBytes() as Data)
    }

    /// export.sig for `exportBin`, signed by `signer`.
    public func signatureList(for exportBin: Data) throws -> Data {
        guard let signer else { return Data() }
        return try signatureList(signature: try exportBin.withUnsafeBytes { try signer.key.signature(for: $0) }, info: signer.info)
    }

    /// export.sig carrying `signature` by the key `info` names. Apart from signing (ECDSA signatures
    /// are random), so that tests can hold the encoding to fixed bytes.
    func signatureList(signature der: [UInt8], info: SignatureInfo) throws -> Data {
        var signature = ExportProtoTEKSignature()
        signature.signatureInfo = ExportProtoSignatureInfo(info)
        signature.batchNum = Int32(batchNumber)
        signature.batchSize = Int32(batchSize)
        signature.signature = Data(der)
        var list = ExportProtoTEKSignatureList()
        list.signatures = [signature]
        return try list.serializedBytes()
    }

    /// A zip with export.bin and, when there is a signer, export.sig.
    public func zip(keys: [DiagnosisKey]) throws -> Data {
        let exportBin = try exportBin(keys: keys)
        let archive = try Archive(data: Data(), accessMode: .create)
        try Self.add("export.bin", exportBin, to: archive)
        if signer != nil { try Self.add("export.sig", try signatureList(for: exportBin), to: archive) }
        return archive.data!
    }

    private static func add(_ name: String, _ contents: Data, to archive: Archive) throws {
        try archive.addEntry(with: name, type: .file, uncompressedSize: Int64(contents.count), compressionMethod: .deflate) { position, size in
            contents.subdata(in: Int(position)..<Int(position) + size)
        }
    }
}

extension ExportProtoSignatureInfo {
    init(_ info: SignatureInfo) {
        self.init()
        verificationKeyID = info.keyId
        verificationKeyVersion = info.keyVersion
        signatureAlgorithm = info.algorithm
    }
}

extension ExportProtoTemporaryExposureKey {
    init(_ diagnosisKey: DiagnosisKey) {
        self.init()
        keyData = Data(diagnosisKey.key.keyData.bytes)
        rollingStartIntervalNumber = Int32(bitPattern: diagnosisKey.key.rollingStartIntervalNumber.rawValue)
        rollingPeriod = Int32(diagnosisKey.key.rollingPeriod)
        transmissionRiskLevel = Int32(diagnosisKey.key.transmissionRiskLevel)
        reportType = ReportType(rawValue: diagnosisKey.reportType.rawValue) ?? .unknown
        if let days = diagnosisKey.daysSinceOnsetOfSymptoms { daysSinceOnsetOfSymptoms = Int32(days) }
    }
}
