import ENCore
import ENKeyFileWriter
@testable import ENKeyFiles
import Foundation
import Testing

@Suite struct HostileKeyFileTests {
    func exportBin(_ keys: [ExportProto.TemporaryExposureKey]) -> Data {
        var export = ExportProto.TemporaryExposureKeyExport()
        export.region = "US"
        export.keys = keys
        return Data(KeyExport.header + export.serializedBytes())
    }

    func key(bytes: Int = 16, start: Int32? = 2_700_000, period: Int32? = nil, risk: Int32 = 0) -> ExportProto.TemporaryExposureKey {
        var key = ExportProto.TemporaryExposureKey()
        key.keyData = [UInt8](repeating: 7, count: bytes)
        key.rollingStartIntervalNumber = start
        key.rollingPeriod = period
        key.transmissionRiskLevel = risk
        return key
    }

    func refusal(_ file: Data, limits: KeyFileLimits = .standard) -> KeyFileError? {
        do {
            _ = try KeyExport(contentsOf: file, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func aWrongHeaderIsRefused() throws {
        var bin = exportBin([key()])
        bin[3] = UInt8(ascii: "X")
        #expect(refusal(try zipArchive([("export.bin", bin)])) == .badHeader)
    }

    /// A cut inside a field is malformed; a cut between two keys leaves a shorter but well-formed
    /// export, which only the signature over the whole export.bin can catch, and does.
    @Test func aTruncatedExportIsRefusedOrFailsItsSignatureAtEveryLength() throws {
        let signer = try P256PrivateKey()
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "k", keyVersion: "1")))
        let bin = writer.exportBin(keys: try KeyExportWriterTests.randomKeys(3))
        let signatures = try writer.signatureList(for: bin)
        var wellFormedCuts = 0
        for length in (KeyExport.header.count + 1)..<bin.count {
            guard let export = try? KeyExport(exportBin: bin.prefix(length), signatureList: signatures) else { continue }
            wellFormedCuts += 1
            #expect(export.keyCount < 3)
            #expect(export.signatureStatus(trustedKeys: [TrustedKey(publicKey: signer.publicKey)]) == .invalid, "cut at \(length)")
        }
        #expect(wellFormedCuts >= 2, "the cuts between keys parse")
    }

    @Test func garbageAfterTheHeaderIsRefused() throws {
        let bin = Data(KeyExport.header) + Data([0x3b, 0xff, 0xff, 0xff])
        guard case .malformedExport = refusal(try zipArchive([("export.bin", bin)])) else { Issue.record("accepted garbage"); return }
    }

    @Test func invalidKeysAreRefusedByNumber() throws {
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(), key(bytes: 15)]))])) == .invalidKey(index: 1, reason: "key data is 15 bytes, not 16"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(bytes: 0)]))])) == .invalidKey(index: 0, reason: "key data is 0 bytes, not 16"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(period: 0)]))])) == .invalidKey(index: 0, reason: "rolling period 0 is outside 1...144"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(period: 145)]))])) == .invalidKey(index: 0, reason: "rolling period 145 is outside 1...144"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(start: nil)]))])) == .invalidKey(index: 0, reason: "it has no rolling start interval number"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(start: -1)]))])) == .invalidKey(index: 0, reason: "rolling start interval number -1 is negative"))
        #expect(refusal(try zipArchive([("export.bin", exportBin([key(risk: 9)]))])) == .invalidKey(index: 0, reason: "transmission risk level 9 is outside 0...8"))
    }

    @Test func missingEntriesAndNonZipsAreRefused() throws {
        #expect(refusal(try zipArchive([("export.sig", Data())])) == .missingEntry("export.bin"))
        guard case .notAZipArchive = refusal(Data("hello, not a zip".utf8)) else { Issue.record("accepted text"); return }
    }

    @Test func aMissingSignatureIsUnsignedAndAGarbledOneIsRefused() throws {
        let unsigned = try KeyExport(contentsOf: try zipArchive([("export.bin", exportBin([key()]))]))
        #expect(unsigned.signatureStatus(trustedKeys: [TrustedKey(publicKey: try P256PrivateKey().publicKey)]) == .unsigned)
        guard case .malformedSignatureList = refusal(try zipArchive([("export.bin", exportBin([key()])), ("export.sig", Data([0x0a, 0x05, 0x01]))])) else {
            Issue.record("accepted a garbled export.sig"); return
        }
    }

    @Test func aSignatureThatIsNotDERIsInvalid() throws {
        let signer = try P256PrivateKey()
        var writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "k", keyVersion: "1")))
        let bin = writer.exportBin(keys: [])
        var list = try ExportProto.TEKSignatureList(serializedBytes: try writer.signatureList(for: bin))
        list.signatures[0].signature = [UInt8](repeating: 0x30, count: 70)
        let export = try KeyExport(exportBin: bin, signatureList: Data(list.serializedBytes()))
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(publicKey: signer.publicKey)]) == .invalid)
        writer.signer = nil
        #expect(try writer.signatureList(for: bin).isEmpty)
    }

    @Test func aThousandSignaturesAreRefusedUnverified() throws {
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1,
                                     signer: (try P256PrivateKey(), SignatureInfo(keyId: "k", keyVersion: "1")))
        let bin = writer.exportBin(keys: [])
        var list = try ExportProto.TEKSignatureList(serializedBytes: try writer.signatureList(for: bin))
        // Each its own bytes, so that the list does not compress into a (refused) zip bomb.
        list.signatures = (0..<1_000).map { _ in
            var signature = list.signatures[0]
            signature.signature = (0..<72).map { _ in UInt8.random(in: 0...255) }
            return signature
        }
        let file = try zipArchive([("export.bin", bin), ("export.sig", Data(list.serializedBytes()))])
        #expect(refusal(file) == .malformedSignatureList("1000 signatures, more than 16"))
        list.signatures = Array(list.signatures.prefix(16))
        #expect(refusal(try zipArchive([("export.bin", bin), ("export.sig", Data(list.serializedBytes()))])) == nil, "sixteen are fine")
    }

    @Test func aSignatureWithAnotherAlgorithmIsInvalid() throws {
        let signer = try P256PrivateKey()
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1,
                                     signer: (signer, SignatureInfo(keyId: "k", keyVersion: "1", algorithm: "1.2.840.10045.4.3.3")))
        let export = try KeyExport(contentsOf: try writer.zip(keys: []))
        #expect(export.signatureStatus(trustedKeys: [TrustedKey(publicKey: signer.publicKey)]) == .invalid)
    }

    @Test func aZipBombIsRefusedBeforeInflating() throws {
        let bomb = try zipArchive([("export.bin", Data(KeyExport.header) + Data(count: 50 << 20))])
        #expect(bomb.count < 1 << 20)
        guard case .oversizedEntry(let name, let declared, _, let limit) = refusal(bomb) else { Issue.record("inflated a bomb"); return }
        #expect(name == "export.bin" && declared == UInt64(16 + 50 << 20))
        #expect(limit.contains("compression ratio"))
        let small = KeyFileLimits(maximumFileSize: 1 << 20, maximumEntrySize: 1 << 20, maximumCompressionRatio: 10_000)
        guard case .oversizedEntry(_, _, _, let sizeLimit) = refusal(bomb, limits: small) else { Issue.record("inflated past the size limit"); return }
        #expect(sizeLimit == "1048576 bytes")
    }

    @Test func anEntryThatLiesAboutItsSizeIsStoppedWhileInflating() throws {
        var lying = try zipArchive([("export.bin", Data(KeyExport.header) + Data(count: 100_000))])
        // Patch the declared uncompressed size (local header offset 22, central directory offset 24) to 20,000.
        for (signature, offset) in [(Data([0x50, 0x4b, 0x03, 0x04]), 22), (Data([0x50, 0x4b, 0x01, 0x02]), 24)] {
            let start = try #require(lying.firstRange(of: signature)).lowerBound + offset
            lying.replaceSubrange(start..<start + 4, with: withUnsafeBytes(of: UInt32(20_000).littleEndian) { Data($0) })
        }
        let generous = KeyFileLimits(maximumFileSize: 1 << 20, maximumEntrySize: 1 << 20, maximumCompressionRatio: 10_000)
        guard case .corruptEntry(let name, let reason) = refusal(lying, limits: generous) else { Issue.record("inflated a lying entry"); return }
        #expect(name == "export.bin" && reason.contains("more than the 20000 bytes it declares"))
    }

    @Test func anOversizedFileIsRefusedUnread() throws {
        let limits = KeyFileLimits(maximumFileSize: 100, maximumEntrySize: 100, maximumCompressionRatio: 20)
        #expect(refusal(Data(count: 101), limits: limits) == .tooLarge(bytes: 101, limit: 100))
    }

    @Test func unknownFieldsFromANewerFormatAreSkipped() throws {
        var bin = exportBin([key()])
        bin.append(contentsOf: [0x4a, 0x02, 0x68, 0x69])  // field 9, 2 bytes
        #expect(try KeyExport(contentsOf: try zipArchive([("export.bin", bin)])).keyCount == 1)
    }

    @Test func errorMessagesSayWhatIsWrong() {
        #expect(KeyFileError.badHeader.description.contains("EK Export v1"))
        #expect(KeyFileError.oversizedEntry(name: "export.bin", declaredBytes: 9, compressedBytes: 1, limit: "x").description.contains("zip bomb"))
    }
}
