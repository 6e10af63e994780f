import ENArchive
import ENCore
import ENKeyFiles
import FoundationEssentials

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
    public func exportBin(keys: [DiagnosisKey]) -> Data {
        var export = ExportProto.TemporaryExposureKeyExport()
        export.startTimestamp = startTimestamp
        export.endTimestamp = endTimestamp
        export.region = region
        export.batchNumber = Int32(batchNumber)
        export.batchSize = Int32(batchSize)
        if let signer { export.signatureInfos = [ExportProto.SignatureInfo(signer.info)] }
        export.keys = keys.map(ExportProto.TemporaryExposureKey.init)
        return Data(KeyExport.header + export.serializedBytes())
    }

    /// export.sig for `exportBin`, signed by `signer`.
    public func signatureList(for exportBin: Data) throws -> Data {
        guard let signer else { return Data() }
        return signatureList(signature: try exportBin.withUnsafeBytes { try signer.key.signature(for: $0) }, info: signer.info)
    }

    /// export.sig carrying `signature` by the key `info` names. Apart from signing (ECDSA signatures
    /// are random), so that tests can hold the encoding to fixed bytes.
    func signatureList(signature der: [UInt8], info: SignatureInfo) -> Data {
        var signature = ExportProto.TEKSignature()
        signature.signatureInfo = ExportProto.SignatureInfo(info)
        signature.batchNumber = Int32(batchNumber)
        signature.batchSize = Int32(batchSize)
        signature.signature = der
        var list = ExportProto.TEKSignatureList()
        list.signatures = [signature]
        return Data(list.serializedBytes())
    }

    /// A zip with export.bin and, when there is a signer, export.sig, both deflated.
    public func zip(keys: [DiagnosisKey]) throws -> Data {
        let exportBin = exportBin(keys: keys)
        var archive = ZipWriter()
        try archive.add("export.bin", exportBin)
        if signer != nil { try archive.add("export.sig", try signatureList(for: exportBin)) }
        return try archive.archive()
    }
}

extension ExportProto.SignatureInfo {
    init(_ info: SignatureInfo) {
        self.init()
        verificationKeyId = info.keyId
        verificationKeyVersion = info.keyVersion
        signatureAlgorithm = info.algorithm
    }
}

extension ExportProto.TemporaryExposureKey {
    init(_ diagnosisKey: DiagnosisKey) {
        self.init()
        keyData = diagnosisKey.key.keyData.bytes
        rollingStartIntervalNumber = Int32(bitPattern: diagnosisKey.key.rollingStartIntervalNumber.rawValue)
        rollingPeriod = Int32(diagnosisKey.key.rollingPeriod)
        transmissionRiskLevel = Int32(diagnosisKey.key.transmissionRiskLevel)
        reportType = diagnosisKey.reportType
        if let days = diagnosisKey.daysSinceOnsetOfSymptoms { daysSinceOnsetOfSymptoms = Int32(days) }
    }
}
