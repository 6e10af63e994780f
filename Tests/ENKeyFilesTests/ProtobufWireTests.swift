import ENCore
import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import Testing

/// Our protobuf wire code against the encoding spec (protobuf.dev/programming-guides/encoding):
/// what it writes, what it accepts, and what it refuses, with the reason and the byte.
@Suite struct ProtobufWireTests {
    static let keyData = (1...16).map { UInt8($0) }

    @Test func writesTheSpecsEncodings() {
        var key = ExportProto.TemporaryExposureKey()
        key.rollingStartIntervalNumber = 150
        #expect(key.serializedBytes() == [0x18, 0x96, 0x01], "the spec's 150")
        key.rollingStartIntervalNumber = -2
        #expect(key.serializedBytes() == [0x18, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], "a negative int32 takes ten bytes")
        key = ExportProto.TemporaryExposureKey()
        for (onset, zigZag) in [(0, 0), (-1, 1), (1, 2), (-14, 27), (Int32.max, 0xfffffffe), (Int32.min, 0xffffffff)] as [(Int32, UInt64)] {
            key.daysSinceOnsetOfSymptoms = onset
            #expect(key.serializedBytes() == [0x30] + KeyMessageTests.varint(zigZag), "sint32 \(onset)")
        }
        var info = ExportProto.SignatureInfo()
        info.verificationKeyId = ""
        #expect(info.serializedBytes() == [0x22, 0x00], "an empty string that is present is written")
    }

    @Test func everyFieldReadsBackAsWritten() throws {
        var key = ExportProto.TemporaryExposureKey()
        (key.keyData, key.transmissionRiskLevel, key.rollingStartIntervalNumber) = (Self.keyData, 8, Int32.max)
        (key.rollingPeriod, key.reportType, key.daysSinceOnsetOfSymptoms) = (1, .revoked, -14)
        let read = try ExportProto.TemporaryExposureKey(serializedBytes: key.serializedBytes())
        #expect(read.keyData == Self.keyData && read.transmissionRiskLevel == 8 && read.rollingStartIntervalNumber == Int32.max)
        #expect(read.rollingPeriod == 1 && read.reportType == .revoked && read.daysSinceOnsetOfSymptoms == -14)
        let empty = try ExportProto.TemporaryExposureKey(serializedBytes: [UInt8]())
        #expect(empty.keyData == nil && empty.rollingPeriod == nil && empty.reportType == nil, "absent fields stay absent")
    }

    /// Unknown fields of every wire type, a group with a group inside included, are skipped.
    @Test func unknownFieldsOfEveryWireTypeAreSkipped() throws {
        let varint: [UInt8] = [0x48, 0x96, 0x01], fixed64: [UInt8] = [0x51, 0, 0, 0, 0, 0, 0, 0, 0], bytes: [UInt8] = [0x5a, 0x02, 0x68, 0x69]
        let groups: [UInt8] = [0x63, 0x08, 0x01, 0x6b, 0x6c, 0x64], fixed32: [UInt8] = [0x75, 1, 2, 3, 4]
        let unknown = [varint, fixed64, bytes, groups, fixed32].flatMap { $0 }
        let message = KeyMessageTests.message(unknown)
        #expect(try KeyExport.decodedKey(Data(message)) == KeyExport.decodedKey(Data(KeyMessageTests.message())))
    }

    /// proto2: a scalar given twice keeps the last, a message given twice merges, and an enum
    /// value the enum lacks leaves the field as it was.
    @Test func repeatedOccurrencesFollowProto2() throws {
        let signature = try ExportProto.TEKSignature(serializedBytes: [0x0a, 0x03, 0x22, 0x01, 0x61, 0x0a, 0x03, 0x1a, 0x01, 0x31, 0x10, 0x01, 0x10, 0x02])
        #expect(signature.signatureInfo?.verificationKeyId == "a" && signature.signatureInfo?.verificationKeyVersion == "1")
        #expect(signature.batchNumber == 2)
        let key = try ExportProto.TemporaryExposureKey(serializedBytes: [0x28, 0x03, 0x28, 0x09])
        #expect(key.reportType == .selfReport)
    }

    @Test(arguments: [
        ([0x08], ProtobufError("field 1 is a varint cut off by the end of the message", at: 1)),
        ([0x08] + Array(repeating: 0xff, count: 9) + [0x02], ProtobufError("field 1 is a varint longer than 64 bits", at: 1)),
        ([0x80], ProtobufError("a field tag is a varint cut off by the end of the message", at: 0)),
        ([0x0a, 0x05, 0x01], ProtobufError("field 1 claims 5 bytes but only 1 remain", at: 1)),
        ([0x09, 0x01, 0x02], ProtobufError("field 1 needs 8 bytes but only 2 remain", at: 1)),
        ([0x15, 0x01], ProtobufError("field 2 needs 4 bytes but only 1 remain", at: 1)),
        ([0x00, 0x00], ProtobufError("field number 0 is outside 1...536870911", at: 0)),
        ([0x80, 0x80, 0x80, 0x80, 0x10], ProtobufError("field number 536870912 is outside 1...536870911", at: 0)),
        ([0x0e], ProtobufError("field 1 has wire type 6, which does not exist", at: 0)),
        ([0x0c], ProtobufError("an end-group tag of field 1 closes no group", at: 0)),
        ([0x3b, 0x08, 0x01], ProtobufError("the group of field 7 has no end-group tag", at: 0)),
        ([0x3b, 0x14], ProtobufError("the group of field 7 is closed by an end-group tag of field 2", at: 1)),
        ([0x18, 0x01, 0x22, 0x00], ProtobufError("rolling_period (field 4) is length-delimited, not varint", at: 2)),
        ([0x0d, 0, 0, 0, 0], ProtobufError("key_data (field 1) is fixed32, not length-delimited", at: 0)),
    ] as [([UInt8], ProtobufError)])
    func malformedMessagesAreRefusedSayingWhatAndWhere(message: [UInt8], error: ProtobufError) {
        #expect(throws: error) { try ExportProto.TemporaryExposureKey(serializedBytes: message) }
    }

    @Test func groupsNestedTooDeeplyAreRefused() {
        let depth = ProtobufWire.maximumGroupDepth + 1
        let message = [UInt8](repeating: 0x4b, count: depth) + [UInt8](repeating: 0x4c, count: depth)
        #expect(throws: ProtobufError("groups nest deeper than 100", at: depth - 1)) {
            _ = try ExportProto.TemporaryExposureKey(serializedBytes: message)
        }
        #expect(throws: Never.self) { _ = try ExportProto.TemporaryExposureKey(serializedBytes: Array(message.dropFirst().dropLast())) }
    }

    @Test func textThatIsNotUTF8IsRefused() {
        #expect(throws: ProtobufError("verification_key_version (field 3) is not UTF-8", at: 0)) {
            try ExportProto.SignatureInfo(serializedBytes: [0x1a, 0x01, 0xff])
        }
    }

    /// A refusal inside a file names the byte of export.bin, header included, and the key by number.
    @Test func offsetsInAFileCountFromItsFirstByte() throws {
        let key = KeyMessageTests.message([0x22, 0x00])
        let bin = Data(KeyExport.header + [0x1a, 0x02, 0x55, 0x53] + [0x3a, UInt8(key.count)] + key)
        let offset = KeyExport.header.count + 4 + 2 + key.count - 2
        #expect(throws: KeyFileError.invalidKey(index: 0, reason:
            "not a TemporaryExposureKey message (rolling_period (field 4) is length-delimited, not varint (at byte \(offset)))")) {
            try KeyExport(exportBin: bin, signatureList: nil)
        }
        #expect(throws: KeyFileError.malformedExport("region (field 3) is fixed64, not length-delimited (at byte 16)")) {
            try KeyExport(exportBin: Data(KeyExport.header + [0x19] + Array(repeating: 0, count: 8)), signatureList: nil)
        }
    }
}
