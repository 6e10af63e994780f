import ArgumentParser
import ENKeyFiles
import FoundationEssentials

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export this device's keys, or inspect diagnosis key files.",
        subcommands: [Export.self, Inspect.self, Sign.self])
}

extension Keys {
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a diagnosis key file holds and whether its signature verifies.",
            discussion: """
                Reads a key export (.zip with export.bin and export.sig, or a bare export.bin) and \
                prints its region, time span, batch, key count and signature status: verified, \
                invalid, unsigned, or unknown-key (no --public-key matches it). With --public-key \
                the exit status is 1 unless the signature is verified.
                """)

        @Argument(help: ArgumentHelp("The key file.", valueName: "file"), transform: ArgumentValue.inputFile)
        var file: String

        @Option(name: .customLong("public-key"),
                help: ArgumentHelp("A trusted public key: a PEM or base64 file, or the base64 text. Repeatable.", valueName: "key"),
                transform: KeyFileInput.trustedKey)
        var publicKeys: [TrustedKey] = []

        @Option(help: ArgumentHelp("Refuse files (and inflated entries) larger than this.", valueName: "MiB"))
        var maxFileSize = KeyFileLimits.standard.maximumFileSize >> 20

        @OptionGroup var output: JSONOutput

        struct Report: Encodable {
            struct Signer: Encodable {
                let keyId: String
                let keyVersion: String
                let algorithm: String
            }
            let file: String
            let region: String
            let startTimestamp: UInt64
            let endTimestamp: UInt64
            let batchNumber: Int
            let batchSize: Int
            let keyCount: Int
            let revisedKeyCount: Int
            let signature: SignatureStatus
            let signatures: [Signer]
        }

        func validate() throws {
            try KeyFileInput.validate(maximumFileSizeMiB: maxFileSize)
        }

        func run() throws {
            let trusted = publicKeys
            let export = try KeyFileInput.load(file, limits: KeyFileInput.limits(maximumFileSizeMiB: maxFileSize))
            let status = export.signatureStatus(trustedKeys: trusted)
            let report = Report(
                file: file, region: export.region, startTimestamp: export.startTimestamp, endTimestamp: export.endTimestamp,
                batchNumber: export.batchNumber, batchSize: export.batchSize, keyCount: export.keyCount,
                revisedKeyCount: export.revisedKeyCount, signature: status,
                signatures: (export.signatures ?? []).map { Report.Signer(keyId: $0.info.keyId, keyVersion: $0.info.keyVersion, algorithm: $0.info.algorithm) })
            if output.json {
                try printJSON(report)
            } else {
                printReport(report)
            }
            if !trusted.isEmpty && status != .verified { throw ExitCode.failure }
        }

        private func printReport(_ report: Report) {
            let signers = report.signatures.map { "key id \"\($0.keyId)\", version \"\($0.keyVersion)\", \($0.algorithm)" }
            printColumns([
                ["File:", report.file],
                ["Region:", report.region],
                ["Time span:", "\(utcTime(Int64(report.startTimestamp))) to \(utcTime(Int64(report.endTimestamp)))"],
                ["Batch:", "\(report.batchNumber) of \(report.batchSize)"],
                ["Keys:", "\(report.keyCount)" + (report.revisedKeyCount > 0 ? " and \(report.revisedKeyCount) revised" : "")],
                ["Signature:", report.signature.rawValue + (signers.isEmpty ? "" : " (\(signers.joined(separator: "; ")))")],
            ])
        }
    }
}
