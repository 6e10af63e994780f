import ENCore
import ENKeyFiles
import Foundation

/// A key file from a key server or a stranger, as enagentd's DetectExposures and
/// `enctl detect offline` take it: read (zip archive or bare export.bin, under the standard
/// limits), every key walked, the signatures checked, and the keys matched against a few
/// sightings (the path `enctl detect offline --insecure-skip-verify` takes unverified files on).
///
/// The same bytes are also taken as the export.sig of a fixed export.bin: in a zip archive the
/// CRC-32 stops nearly every mutation of export.sig before its protobuf is decoded.
///
/// The bytes are also taken as one TemporaryExposureKey message: a key the fast scanner reads
/// must be the key the full reader decodes (the scanner may only decline).
public func fuzzKeyExport(_ input: UnsafeRawBufferPointer) {
    let file = Data(input)
    if let scanned = KeyExport.scannedKey(input) {
        let decoded = try? KeyExport.decodedKey(file)
        precondition(decoded == scanned, "the scanner read \(scanned), the full reader \(String(describing: decoded)), from \(Array(input))")
    }
    if let export = try? KeyExport(exportBin: KeyExportFixtures.exportBin, signatureList: file) {
        _ = export.signatureStatus(trustedKeys: KeyExportFixtures.trustedKeys)
    }
    guard let export = try? KeyExport(contentsOf: file, limits: .standard) else { return }
    var keys = 0, revisions = 0, read = [DiagnosisKey: Int]()
    let walked = (try? export.forEachKey { key, isRevision in
        if isRevision { revisions += 1 } else { keys += 1 }
        read[key, default: 0] += 1
        _ = key.key.rollingEndIntervalNumber
    }) != nil
    precondition(keys == export.keyCount && revisions == export.revisedKeyCount, "forEachKey disagrees with the counts KeyExport read")
    // The stream, as a detection reads it (`nextKeys`, whose plain keys skip `next`), reads the same keys.
    if walked, let stream = try? KeyFileStream(KeyFileContents(file), limits: .standard) {
        var streamed = [DiagnosisKey](), whole = true
        do { while try stream.nextKeys(7, into: &streamed) {} } catch { whole = false }
        precondition(!whole || Dictionary(streamed.map { ($0, 1) }, uniquingKeysWith: +) == read, "the stream read other keys than the whole file's reader")
    }
    _ = export.signatureStatus(trustedKeys: KeyExportFixtures.trustedKeys)
    let detector = ExposureDetector(index: KeyExportFixtures.sightings, threads: 1)
    if let (result, windows) = try? detector.exposureWindows(of: [ExposureDetector.File(export)], configuration: ExposureConfigurationV2()) {
        _ = ExposureConfigurationV2().dailySummaries(of: windows, now: KeyExportFixtures.now)
        _ = ExposureConfigurationV1().summary(of: result.matches, now: KeyExportFixtures.now)
    }
}

/// The fixed trust and sightings the key file fuzzer checks against.
enum KeyExportFixtures {
    /// The keys the committed real key files (Tests/ENKeyFilesTests/Fixtures/README.md) verify with,
    /// so that seeds reach a verified signature and mutations an invalid one.
    static let trustedKeys: [TrustedKey] = [
        TrustedKey(keyId: "some_id", keyVersion: "1", publicKey: try! TrustedKey.publicKey(from: """
            -----BEGIN PUBLIC KEY-----
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEml59itec9qzwVojreLXdPNRsUWzf
            YHc1cKvIIi6/H56AJS/kZEYQnfDpxrgyGhdAm+pNN2GAJ3XdnQZ1Sk4amg==
            -----END PUBLIC KEY-----
            """)),
        TrustedKey(keyId: "310", keyVersion: "v1", publicKey: try! TrustedKey.publicKey(
            from: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE49JY6kekDgxj3Crm4y6kEHdfoKQFSNDM4mV9cgDb+e5nOAw0GeRoRThCu9/wX5wDT2QloFoOjl2pGZHI0f3C3w==")),
        // Trusted for any key id (the early-2020 file names none).
        TrustedKey(publicKey: try! TrustedKey.publicKey(
            from: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUczyMAkfSeoU77Nmcb1G7t7xyGCAhQqMOIVDFLFas3J+elP7CiotovigCLWj706F07j1EPL27ThRzZl7Ha9uOA==")),
    ]

    /// Sightings of the first four RPIs of the EN crypto test vectors' TEK
    /// (75c734c6dd1a782de7a965da5eb93125 from interval 2642976), which the seed
    /// `Fuzz/Corpus/KeyExport/crypto-vector-key.export.bin` publishes.
    static let sightings = SightingIndex([
        ("8be6cd371c5c891604bfbe49df845096", "72033874", 2_642_976),
        ("3c9a1de5dd6b02afa7fded7b570b3e56", "c29211b1", 2_642_977),
        ("243ffe9a3b08bded3094bac8630bb8ad", "6adfad03", 2_642_978),
        ("dfc3ed265e97d0eabb630e168b4214ed", "f1e2f80b", 2_642_979),
    ].flatMap { rpi, aem, interval in
        [10, 40, 400].map { offset in
            Sighting(rpi: try! Bytes16(hex: rpi), aem: try! AssociatedEncryptedMetadata(hex: aem), rssi: -60,
                     time: Int64(interval) * 600 + offset, adapter: "hci0")
        }
    })

    /// A bare export.bin with only its header and region (US). Made anew for every input: a
    /// global `Data` keeps its storage behind a pointer with enum tag bits in it, which
    /// LeakSanitizer does not recognise, so it reported the storage as leaked.
    static var exportBin: Data { Data(KeyExport.header + [0x1A, 0x02, 0x55, 0x53]) }

    /// Three days after the vectors' key.
    static let now: Int64 = 2_642_976 * 600 + 3 * 86_400
}
