import ENCore
import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import TestSupport
import Testing

@Suite struct KeyExportWriterTests {
    static func randomKeys(_ count: Int) throws -> [DiagnosisKey] {
        try (0..<count).map { (index: Int) throws -> DiagnosisKey in
            let start = ENIntervalNumber(2_700_000 + UInt32(index % 14) * 144)
            let onset: Int? = index % 3 == 0 ? nil : index % 29 - 14
            let key = TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: start,
                                           rollingPeriod: UInt32(index % 144 + 1), transmissionRiskLevel: index % 9)
            return DiagnosisKey(key: key, reportType: ReportType(rawValue: index % 6)!, daysSinceOnsetOfSymptoms: onset)
        }
    }

    @Test func signedZipRoundTripsEveryField() throws {
        let signingKey = try P256PrivateKey()
        let writer = KeyExportWriter(region: "DE", startTimestamp: 100, endTimestamp: 200,
                                     signer: (signingKey, SignatureInfo(keyId: "262", keyVersion: "v2")))
        let keys = try Self.randomKeys(300)
        let export = try KeyExport(contentsOf: try writer.zip(keys: keys))
        #expect(export.region == "DE" && export.startTimestamp == 100 && export.endTimestamp == 200)
        #expect(export.keyCount == 300)
        var read = [DiagnosisKey]()
        try export.forEachKey { key, _ in read.append(key) }
        #expect(read == keys)
        let trusted = [TrustedKey(keyId: "262", keyVersion: "v2", publicKey: try P256PublicKey(pem: signingKey.publicKey.pem))]
        #expect(export.signatureStatus(trustedKeys: trusted) == .verified)
    }

    @Test func aSliceOfLargerDataReadsTheSameKeys() throws {
        let keys = try Self.randomKeys(20)
        let bin = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1).exportBin(keys: keys)
        let slice = (Data([0xff, 0xff, 0xff]) + bin)[3...]
        var read = [DiagnosisKey]()
        try KeyExport(exportBin: slice, signatureList: nil).forEachKey { key, _ in read.append(key) }
        #expect(read == keys)
    }

    @Test func anyChangedByteOfExportBinBreaksTheSignature() throws {
        let signingKey = try P256PrivateKey()
        let writer = KeyExportWriter(region: "US", startTimestamp: 1, endTimestamp: 2, signer: (signingKey, SignatureInfo(keyId: "a", keyVersion: "1")))
        var exportBin = writer.exportBin(keys: try Self.randomKeys(3))
        let signatures = try writer.signatureList(for: exportBin)
        let trusted = [TrustedKey(publicKey: signingKey.publicKey)]
        #expect(try KeyExport(exportBin: exportBin, signatureList: signatures).signatureStatus(trustedKeys: trusted) == .verified)
        // Flip a bit inside the first key's data: still a valid export, no longer the signed one.
        let keyDataOffset = try #require(exportBin.firstRange(of: Data([0x0a, 0x10]), in: KeyExport.header.count..<exportBin.count)).upperBound
        exportBin[keyDataOffset] ^= 0x01
        #expect(try KeyExport(exportBin: exportBin, signatureList: signatures).signatureStatus(trustedKeys: trusted) == .invalid)
    }

    @Test func pemAndBase64FormsOfAKeyAreTheSameKey() throws {
        let key = try P256PrivateKey()
        let pem = key.publicKey.pem
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let base64 = Data(key.publicKey.subjectPublicKeyInfo).base64EncodedString()
        #expect(try TrustedKey.publicKey(from: pem).subjectPublicKeyInfo == TrustedKey.publicKey(from: base64).subjectPublicKeyInfo)
        #expect(try P256PrivateKey(pem: key.pem).publicKey.subjectPublicKeyInfo == key.publicKey.subjectPublicKeyInfo)
    }

    @Test func keysThatAreNotP256OrNotKeysAreRefused() throws {
        #expect(throws: P256KeyError.unreadablePublicKey) { try TrustedKey.publicKey(from: "not base64 !") }
        #expect(throws: P256KeyError.unreadablePublicKey) { try TrustedKey.publicKey(from: "AAAA") }
        #expect(throws: P256KeyError.unreadablePrivateKey) { try P256PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        // An Ed25519 SubjectPublicKeyInfo.
        let ed25519 = "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE="
        expectError({ try TrustedKey.publicKey(from: ed25519) }) { error in
            guard case P256KeyError.notP256 = error else { return false }
            return true
        }
    }
}
