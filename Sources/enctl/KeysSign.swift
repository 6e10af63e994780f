import ArgumentParser
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import FoundationEssentials

extension Keys {
    /// `enctl keys sign`: what a health authority's key server does to the keys it publishes.
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign a key export file, as a health authority's key server does.",
            discussion: """
                Reads a key export (.zip or export.bin; signed or not), and writes a zip with the \
                same keys, time span and batch, its export.bin carrying the signature info and \
                its export.sig an ECDSA P-256 signature by --private-key (a PEM private key, such \
                as 'openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt' \
                makes). For test servers and labs; real authorities sign on their servers.
                """)

        @Argument(help: ArgumentHelp("The key file to sign.", valueName: "file"), transform: ArgumentValue.inputFile)
        var file: String

        @Option(help: ArgumentHelp("The signing key (PEM).", valueName: "file"), transform: ArgumentValue.inputFile)
        var privateKey: String

        @Option(help: ArgumentHelp("The verification key id, such as 310 (an MCC).", valueName: "id"), transform: ArgumentValue.text)
        var keyId: String

        @Option(help: ArgumentHelp("The key version.", valueName: "version"), transform: ArgumentValue.text)
        var keyVersion = "v1"

        @Option(help: ArgumentHelp("The region to write (default: the file's own).", valueName: "region"), transform: ArgumentValue.text)
        var region: String?

        @Option(help: ArgumentHelp("The signed zip to write.", valueName: "file"), transform: ArgumentValue.outputFile)
        var out: String

        func run() throws {
            let export = try KeyFileInput.load(file, limits: .standard)
            let pem: String
            do { pem = try String(contentsOfFile: privateKey, encoding: .utf8) } catch { throw CommandError("cannot read \(privateKey): \(error)") }
            let key: P256PrivateKey
            do { key = try P256PrivateKey(pem: pem) } catch { throw CommandError("\(privateKey): \(error)") }
            var keys = [DiagnosisKey]()
            try export.forEachKey { key, isRevision in if !isRevision { keys.append(key) } }
            var writer = KeyExportWriter(region: region ?? export.region, startTimestamp: export.startTimestamp, endTimestamp: export.endTimestamp,
                                         signer: (key, SignatureInfo(keyId: keyId, keyVersion: keyVersion)))
            writer.batchNumber = export.batchNumber
            writer.batchSize = export.batchSize
            guard FileManager.default.createFile(atPath: out, contents: try writer.zip(keys: keys)) else { throw CommandError("cannot write \(out)") }
            print("\(keys.count) keys signed into \(out)")
        }
    }
}
