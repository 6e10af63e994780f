import ENKeyFiles

// The field numbers of Sources/ENKeyFiles/Proto/export.proto, as ExportProto reads them.

extension ExportProto.TemporaryExposureKeyExport: ProtobufEncodable {
    package func write(to writer: inout ProtobufWriter) {
        writer.write(1, fixed64: startTimestamp)
        writer.write(2, fixed64: endTimestamp)
        writer.write(3, string: region)
        writer.write(4, int32: batchNumber)
        writer.write(5, int32: batchSize)
        writer.write(6, messages: signatureInfos)
        writer.write(7, messages: keys)
        writer.write(8, messages: revisedKeys)
    }
}

extension ExportProto.SignatureInfo: ProtobufEncodable {
    package func write(to writer: inout ProtobufWriter) {
        writer.write(3, string: verificationKeyVersion)
        writer.write(4, string: verificationKeyId)
        writer.write(5, string: signatureAlgorithm)
    }
}

extension ExportProto.TemporaryExposureKey: ProtobufEncodable {
    package func write(to writer: inout ProtobufWriter) {
        writer.write(1, bytes: keyData)
        writer.write(2, int32: transmissionRiskLevel)
        writer.write(3, int32: rollingStartIntervalNumber)
        writer.write(4, int32: rollingPeriod)
        writer.write(5, int32: reportType.map { Int32($0.rawValue) })
        writer.write(6, sint32: daysSinceOnsetOfSymptoms)
    }
}

extension ExportProto.TEKSignatureList: ProtobufEncodable {
    package func write(to writer: inout ProtobufWriter) {
        writer.write(1, messages: signatures)
    }
}

extension ExportProto.TEKSignature: ProtobufEncodable {
    package func write(to writer: inout ProtobufWriter) {
        writer.write(1, message: signatureInfo)
        writer.write(2, int32: batchNumber)
        writer.write(3, int32: batchSize)
        writer.write(4, bytes: signature)
    }
}
