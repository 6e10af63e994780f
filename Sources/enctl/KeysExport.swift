import ArgumentParser
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import FoundationEssentials

extension Keys {
    /// `enctl keys export`: the device's own keys, after a positive diagnosis.
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Export this device's keys of the last 14 days to share after a positive diagnosis.",
            discussion: """
                Asks enagentd for the Temporary Exposure Keys valid during the last 14 days \
                (today's key only once it has rolled, since it is still on the air), however \
                many days retention-days keeps. Sharing them lets \
                others learn they met you, so enctl asks first; --yes answers for scripts. JSON \
                gives the upload shape health authorities use (keyData in base64, \
                rollingStartNumber, rollingPeriod, transmissionRisk); zip an unsigned export \
                file. Needs root or the group enagent.
                """)

        @Option(help: "json or zip.")
        var format: Format = .json

        @Option(help: ArgumentHelp("Write to this file instead of standard output (zip needs it).", valueName: "file"), transform: ArgumentValue.outputFile)
        var out: String?

        @Flag(help: "Share without asking.")
        var yes = false

        enum Format: String, ExpressibleByArgument, CaseIterable { case json, zip }

        func validate() throws {
            if format == .zip && out == nil { throw ValidationError("--format zip needs --out FILE.") }
        }

        func run() throws {
            guard yes || Confirmation.ask("Share this device's exposure keys of the last 14 days?") else {
                throw CommandError("no keys shared")
            }
            let keys = PublishRequest.lastFourteenDays(try DaemonKeys.history(try DaemonClient()), now: UploadSender.now)
            let data: Data
            switch format {
            case .json:
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                data = try encoder.encode(Upload(temporaryExposureKeys: keys.map(Upload.Key.init)))
            case .zip:
                let starts = keys.map { UInt64($0.rollingStartIntervalNumber.unixSeconds) }
                let writer = KeyExportWriter(region: "", startTimestamp: starts.min() ?? 0, endTimestamp: (starts.max() ?? 0) + UInt64(UTCDay.seconds))
                data = try writer.zip(keys: keys.map { DiagnosisKey(key: $0) })
            }
            if let out {
                guard FileManager.default.createFile(atPath: out, contents: data, attributes: [.posixPermissions: 0o600]) else {
                    throw CommandError("cannot write \(out)")
                }
                StandardStream.error.write("\(keys.count) keys written to \(out)\n")
            } else {
                StandardStream.output.write(data + Data("\n".utf8))
            }
        }

        struct Upload: Encodable {
            var temporaryExposureKeys: [Key]

            struct Key: Encodable {
                var keyData: String, rollingStartNumber: UInt32, rollingPeriod: UInt32, transmissionRisk: Int
                init(_ key: TemporaryExposureKey) {
                    keyData = Data(key.keyData.bytes).base64EncodedString()
                    rollingStartNumber = key.rollingStartIntervalNumber.rawValue
                    rollingPeriod = key.rollingPeriod
                    transmissionRisk = key.transmissionRiskLevel
                }
            }
        }
    }
}
