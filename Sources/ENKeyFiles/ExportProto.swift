import ENCore

/// The messages of the key export format (Proto/export.proto), proto2: an optional field is nil
/// when absent, so that "absent" and "the default" stay apart as the format needs (rolling
/// period defaults to 144, a missing rolling start is an error).
///
/// TemporaryExposureKeyExport itself is not decoded whole: `KeyFileStream` reads its fields as
/// export.bin streams by, so that its keys are never all held at once.
package enum ExportProto {
    package struct TemporaryExposureKeyExport {
        package var startTimestamp: UInt64?
        package var endTimestamp: UInt64?
        package var region: String?
        package var batchNumber: Int32?
        package var batchSize: Int32?
        package var signatureInfos: [SignatureInfo] = []
        package var keys: [TemporaryExposureKey] = []
        package var revisedKeys: [TemporaryExposureKey] = []

        package init() {}
    }

    package struct SignatureInfo: ProtobufDecodable {
        // Fields 1 and 2 are reserved: early-2020 files put an app bundle id and a package name there.
        package var verificationKeyVersion: String?
        package var verificationKeyId: String?
        package var signatureAlgorithm: String?

        package init() {}

        package mutating func read(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws(ProtobufError) {
            switch field.number {
            case 3: verificationKeyVersion = try field.string("verification_key_version", in: bytes)
            case 4: verificationKeyId = try field.string("verification_key_id", in: bytes)
            case 5: signatureAlgorithm = try field.string("signature_algorithm", in: bytes)
            default: break
            }
        }
    }

    package struct TemporaryExposureKey: ProtobufDecodable {
        package var keyData: [UInt8]?
        package var transmissionRiskLevel: Int32?
        package var rollingStartIntervalNumber: Int32?
        package var rollingPeriod: Int32?
        package var reportType: ReportType?
        package var daysSinceOnsetOfSymptoms: Int32?

        package init() {}

        package mutating func read(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws(ProtobufError) {
            switch field.number {
            case 1: keyData = try field.bytes("key_data", in: bytes)
            case 2: transmissionRiskLevel = try field.int32("transmission_risk_level")
            case 3: rollingStartIntervalNumber = try field.int32("rolling_start_interval_number")
            case 4: rollingPeriod = try field.int32("rolling_period")
            case 5:
                // proto2 enums are closed: a value the enum lacks is an unknown field and leaves
                // the field as it was.
                if let type = ReportType(rawValue: Int(try field.int32("report_type"))) { reportType = type }
            case 6: daysSinceOnsetOfSymptoms = try field.sint32("days_since_onset_of_symptoms")
            default: break
            }
        }
    }

    package struct TEKSignatureList: ProtobufDecodable {
        package var signatures: [TEKSignature] = []

        package init() {}

        package mutating func read(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws(ProtobufError) {
            if field.number == 1 { signatures.append(try field.message("signatures", in: bytes)) }
        }
    }

    package struct TEKSignature: ProtobufDecodable {
        package var signatureInfo: SignatureInfo?
        package var batchNumber: Int32?
        package var batchSize: Int32?
        package var signature: [UInt8]?

        package init() {}

        package mutating func read(_ field: ProtobufField, in bytes: UnsafeRawBufferPointer) throws(ProtobufError) {
            switch field.number {
            case 1: signatureInfo = try field.message("signature_info", in: bytes, over: signatureInfo ?? SignatureInfo())
            case 2: batchNumber = try field.int32("batch_num")
            case 3: batchSize = try field.int32("batch_size")
            case 4: signature = try field.bytes("signature", in: bytes)
            default: break
            }
        }
    }
}
