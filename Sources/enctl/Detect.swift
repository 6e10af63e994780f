import ArgumentParser
import ENCore
import ENKeyFiles
import Foundation

struct Detect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Match diagnosis key files against recorded sightings and score the exposures.",
        discussion: """
            With --offline, enctl does the whole detection itself: it reads the sightings from a \
            JSON Lines file (--sightings) or an agent database (--db), checks every key file's \
            signature, matches the keys on all cores, groups the matches into exposure windows \
            and scores them with the v2 configuration (and the v1 one, when --config has v1 keys).

            Every key file must verify against a --public-key; a file that does not stops the \
            command with an error naming it. --insecure-skip-verify accepts unsigned and \
            unverifiable files.

            Exit status: 0 when detection ran (whether or not it found an exposure), 1 when an \
            input was unusable or a signature did not verify, 64 for a usage error.
            """)

    @Flag(help: "Detect without the daemon, from --sightings or --db.")
    var offline = false

    @Option(help: ArgumentHelp("Sightings, one JSON object per line: {\"rpi\", \"aem\", \"rssi\", \"time\"}.", valueName: "file.jsonl"))
    var sightings: String?

    @Option(help: ArgumentHelp("Read the sightings from an agent database instead.", valueName: "path"))
    var db: String?

    @Option(name: .customLong("keys"), help: ArgumentHelp("A diagnosis key file (.zip or export.bin). Repeatable.", valueName: "file"))
    var keyFiles: [String] = []

    @Option(name: .customLong("public-key"),
            help: ArgumentHelp("A trusted public key: a PEM or base64 file, or the base64 text. Repeatable.", valueName: "key"))
    var publicKeys: [String] = []

    @Flag(help: "Accept key files whose signature is missing or does not verify.")
    var insecureSkipVerify = false

    @Option(help: ArgumentHelp("Exposure configuration JSON (v2 keys, v1 keys or both).", valueName: "file"))
    var config: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("This device's RSSI correction in dB, added to every RSSI.", valueName: "dB"),
            transform: ArgumentValue.integer)
    var rssiCorrection = 0

    @Option(help: ArgumentHelp("Score as of this time, in unix seconds (default: now).", valueName: "seconds"))
    var now: Int64?

    @Option(help: ArgumentHelp("Refuse key files (and inflated entries) larger than this.", valueName: "MiB"))
    var maxFileSize = KeyFileLimits.standard.maximumFileSize >> 20

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard offline else {
            throw ValidationError("Detection through enagentd is not available in this build; use --offline with --sightings or --db.")
        }
        guard (sightings == nil) != (db == nil) else { throw ValidationError("Give exactly one of --sightings and --db.") }
        guard !keyFiles.isEmpty else { throw ValidationError("Give at least one key file with --keys.") }
        guard !publicKeys.isEmpty || insecureSkipVerify else {
            throw ValidationError("Give the health authority's --public-key to verify the key files (or --insecure-skip-verify).")
        }
        try KeyFileInput.validate(maximumFileSizeMiB: maxFileSize)
    }

    func run() throws {
        let configuration = try loadConfiguration()
        let trusted = try publicKeys.map(KeyFileInput.trustedKey)
        let limits = KeyFileInput.limits(maximumFileSizeMiB: maxFileSize)
        var exports = [KeyExport](), files = [DetectionReport.File]()
        for path in keyFiles {
            let export = try KeyFileInput.load(path, limits: limits)
            let status = export.signatureStatus(trustedKeys: trusted)
            guard status == .verified || insecureSkipVerify else {
                throw CommandError("\(path): the signature is \(status.rawValue); refusing the file (is --public-key the authority's key?)")
            }
            exports.append(export)
            files.append(DetectionReport.File(path: path, region: export.region, keyCount: export.keyCount, signature: status))
        }
        let recorded = try sightings.map(SightingsInput.jsonLines) ?? SightingsInput.database(db!)
        let result = try ExposureDetector(index: SightingIndex(recorded), rssiCorrection: rssiCorrection).detect(exports)
        let time = now ?? Int64(Date().timeIntervalSince1970)
        let windows = result.matches.flatMap { ExposureWindowing.windows(for: $0, configuration: configuration.v2) }
            .sorted { ($0.date, $0.diagnosisKey.key.rollingStartIntervalNumber) < ($1.date, $1.diagnosisKey.key.rollingStartIntervalNumber) }
        let report = DetectionReport(
            files: files, sightingCount: recorded.count, keysChecked: result.keysChecked,
            matchedKeyCount: result.matches.count, windows: windows,
            dailySummaries: configuration.v2.dailySummaries(of: windows, now: time),
            v1: configuration.v1.map { DetectionReport.V1(summary: $0.summary(of: windows, now: time), exposureInfos: $0.exposureInfos(of: windows, now: time)) })
        if json {
            try printJSON(report)
        } else {
            report.printText()
        }
    }

    private func loadConfiguration() throws -> ExposureConfiguration {
        guard let config else { return ExposureConfiguration() }
        do {
            return try JSONDecoder().decode(ExposureConfiguration.self, from: try Data(contentsOf: URL(fileURLWithPath: config)))
        } catch let error as ConfigurationError {
            throw CommandError("\(config): \(error)")
        } catch let error as DecodingError {
            throw CommandError("\(config): not a JSON object (\(error))")
        } catch {
            throw CommandError("\(config): \(error.localizedDescription)")
        }
    }
}
