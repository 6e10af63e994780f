import ENCore
import ENKeyFiles
import Foundation
import Testing

@Suite struct PublicExportFileTests {
    @Test func serverExampleHoldsItsTwoListedKeysAndVerifies() throws {
        let export = try KeyExport(contentsOf: try Fixture.data("en-server-example.zip"))
        #expect(export.region == "US")
        #expect(export.keyCount == 2)
        #expect(export.batchNumber == 1 && export.batchSize == 1)
        #expect(export.signatureInfos == [SignatureInfo(keyId: "some_id", keyVersion: "1")])

        struct Listed: Decodable {
            struct Key: Decodable { let key: String; let rollingStartNumber: UInt32; let rollingPeriod: UInt32; let transmissionRisk: Int }
            let temporaryExposureKeys: [Key]
        }
        let listed = try JSONDecoder().decode(Listed.self, from: try Fixture.data("en-server-example.keys.json"))
        var keys = [DiagnosisKey]()
        try export.forEachKey { key, isRevision in
            #expect(!isRevision)
            keys.append(key)
        }
        #expect(keys.map { Data($0.key.keyData.bytes).base64EncodedString() } == listed.temporaryExposureKeys.map(\.key))
        #expect(keys.map(\.key.rollingStartIntervalNumber.rawValue) == listed.temporaryExposureKeys.map(\.rollingStartNumber))
        #expect(keys.map(\.key.rollingPeriod) == listed.temporaryExposureKeys.map(\.rollingPeriod))
        #expect(keys.map(\.key.transmissionRiskLevel) == listed.temporaryExposureKeys.map(\.transmissionRisk))

        let publicKey = try TrustedKey.publicKey(from: try Fixture.text("en-server-example.public.pem"))
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyId: "some_id", keyVersion: "1", publicKey: publicKey)]) == .verified)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(publicKey: publicKey)]) == .verified)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyId: "other", keyVersion: "1", publicKey: publicKey)]) == .unknownKey)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyId: "some_id", keyVersion: "2", publicKey: publicKey)]) == .unknownKey)
        let stranger = try P256PrivateKey().publicKey
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyId: "some_id", keyVersion: "1", publicKey: stranger)]) == .invalid)
    }

    @Test func internalsSampleHas140KeysAndVerifiesWithKey310() throws {
        let export = try KeyExport(contentsOf: try Fixture.data("en-internals-sample.zip"))
        #expect(export.region == "US")
        #expect(export.keyCount == 140)
        #expect(export.startTimestamp < export.endTimestamp)
        var count = 0
        try export.forEachKey { key, _ in
            count += 1
            #expect((1...144).contains(key.key.rollingPeriod))
        }
        #expect(count == 140)
        let publicKey = try TrustedKey.publicKey(from: Fixture.internalsSampleKey)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyId: "310", keyVersion: "v1", publicKey: publicKey)]) == .verified)
    }

    @Test func legacySignatureInfoLayoutIsAcceptedAndVerifies() throws {
        let export = try KeyExport(contentsOf: try Fixture.data("legacy-signature-info-sample.zip"))
        #expect(export.keyCount == 110)
        let info = try #require(export.signatures?.first?.info)
        #expect(info.keyId == "" && info.keyVersion == "v1" && info.algorithm == "ECDSA p-256 SHA-256")
        let publicKey = try TrustedKey.publicKey(from: Fixture.legacySampleKey)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(keyVersion: "v1", publicKey: publicKey)]) == .verified)
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(publicKey: try TrustedKey.publicKey(from: Fixture.internalsSampleKey))]) == .invalid)
    }

    @Test func bareExportBinWith200KeysIsUnsigned() throws {
        let export = try KeyExport(contentsOf: try Fixture.data("en-internals-200-keys.export.bin"))
        #expect(export.keyCount == 200)
        #expect(export.signatureStatus(trustedKeys: []) == .unsigned)
    }
}
