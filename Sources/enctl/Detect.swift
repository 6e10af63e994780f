import ArgumentParser
import ENAPI
import ENBus
import ENCore
import ENKeyFiles
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// `enctl detect`: the three ways of detecting, as subcommands that share their options.
struct Detect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Match diagnosis key files against recorded sightings and score the exposures.",
        discussion: """
            'enctl detect files' (the default: 'enctl detect FILE...') hands key files to \
            enagentd, which verifies and matches them against its own sightings; 'enctl detect \
            server' first downloads what the key server lists and this machine has not processed; \
            'enctl detect offline' does the whole detection itself, without the daemon. See each \
            one's --help.

            When its output is the journal (JOURNAL_STREAM, as under the timer's unit), which \
            groups adm and systemd-journal read, enctl detect files and server print what they \
            checked and nothing of what they found: 'enctl status' and 'enctl windows' show it.

            Exit status: 0 when detection ran (whether or not it found an exposure), 1 when an \
            input was unusable or a signature did not verify, 64 for a usage error.
            """,
        subcommands: [Files.self, Server.self, Offline.self], defaultSubcommand: Files.self)
}

/// --config and --json, which every way of detecting takes.
struct DetectionOptions: ParsableArguments {
    @OptionGroup var configuration: ConfigurationOption
    @OptionGroup var output: JSONOutput
}

/// --max-file-size, for the commands that read or download key files themselves.
struct KeyFileSizeOption: ParsableArguments {
    @Option(help: ArgumentHelp("Refuse key files (inflated entries, downloads from the key server) larger than this.", valueName: "MiB"))
    var maxFileSize = KeyFileLimits.standard.maximumFileSize >> 20

    func validate() throws { try KeyFileInput.validate(maximumFileSizeMiB: maxFileSize) }
}

/// --max-keys, for detection through enagentd.
struct KeyBudgetOption: ParsableArguments {
    @Option(help: ArgumentHelp("Refuse, before matching it, a batch of files that would take the run past this many keys (default: no limit).",
                               valueName: "count"))
    var maxKeys: UInt64?

    func validate() throws {
        if maxKeys == 0 { throw ValidationError("--max-keys must be at least 1.") }
    }
}

extension Detect {
    /// `enctl detect files`: enagentd detects with the files given.
    struct Files: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hand key files to enagentd, which detects against its own sightings (needs group enagent).",
            discussion: """
                enctl opens a detection session with enagentd and passes the files as open file \
                descriptors, \(DaemonDetection.batchSize) at a time (the daemon never opens your \
                paths); enagentd verifies each batch against its trusted keys \
                (trusted-keys-directory), matches it against its sightings and, when the session \
                finishes, stores the exposure windows as one detection; files it processed \
                before are skipped, and a key published in several files counts once. Any error \
                cancels the session: nothing of it is recorded. 'enctl windows', 'enctl summary' \
                and 'enctl exposures' show the results.
                """)

        @Argument(help: ArgumentHelp("Diagnosis key files (.zip or export.bin).", valueName: "file"), transform: ArgumentValue.inputFile)
        var files: [String] = []

        @OptionGroup var budget: KeyBudgetOption

        @OptionGroup var options: DetectionOptions

        func validate() throws {
            guard !files.isEmpty else { throw ValidationError("Give at least one key file ('enctl detect server' downloads them).") }
        }

        func run() throws {
            try DaemonDetection(options: options, maxKeys: budget.maxKeys ?? 0)
                .run(paths: files, names: files, configuration: try options.configuration.configurationText())
        }
    }

    /// `enctl detect server`: download, then enagentd detects.
    struct Server: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Download the key files not processed before from the key server and have enagentd detect with them.",
            discussion: """
                Reads the key server's index (key-server.conf: url, index), downloads the files \
                this machine has not handed to enagentd before into the cache, and hands them \
                over as 'enctl detect files' does. Downloads survive a failure, so the next run \
                fetches only what is still missing. This is what the timer \
                (enagent-detect.timer) runs, after 'enctl share --pending'.
                """)

        @OptionGroup var server: ServerConfigurationOption

        @Option(help: ArgumentHelp("Where downloads are kept (default: $CACHE_DIRECTORY, else ~/.cache/enagent).",
                                   valueName: "dir"), transform: ArgumentValue.text)
        var cacheDir: String?

        @Option(help: ArgumentHelp("Where the list of files handed to enagentd is kept, which cleaning the cache must not forget (default: $STATE_DIRECTORY, else ~/.local/state/enagent).",
                                   valueName: "dir"), transform: ArgumentValue.text)
        var stateDir: String?

        @OptionGroup var size: KeyFileSizeOption

        @OptionGroup var budget: KeyBudgetOption

        @OptionGroup var options: DetectionOptions

        /// Fetches what the key server lists and this machine has not processed, then detects with
        /// it. Downloads survive a failure, so the next run fetches only what is still missing.
        func run() throws {
            let keyServer = try server.load()
            let cache = try DownloadCache(directory: cacheDir ?? DownloadCache.defaultDirectory, stateDirectory: stateDir ?? DownloadCache.defaultStateDirectory)
            let index = String(decoding: try Download.data(from: URL(string: keyServer.index, relativeTo: keyServer.url)!,
                                                           maximumSize: Download.maximumIndexSize, timeout: keyServer.timeout), as: UTF8.self)
            let entries = index.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            let processed = cache.processed()
            let pending = entries.filter { !processed.contains($0) }
            guard !pending.isEmpty else {
                if options.output.json { return try printJSON(DetectionSummary()) }
                return print("No new key files on \(keyServer.url.absoluteString) (\(entries.count) listed, all processed before).")
            }
            let progress = Progress(total: pending.count)
            for (number, entry) in pending.enumerated() where !FileManager.default.fileExists(atPath: cache.file(for: entry)) {
                progress.show(number + 1, "downloading \(entry)")
                guard let url = keyServer.exportURL(entry) else { throw CommandError("\(entry): not a path on the key server") }
                try cache.download(entry, from: url, maximumSize: size.maxFileSize << 20, timeout: keyServer.timeout)
            }
            if let region = keyServer.region {
                let limits = KeyFileInput.limits(maximumFileSizeMiB: size.maxFileSize)
                for entry in pending {
                    let export = try KeyFileInput.summary(cache.file(for: entry), limits: limits)
                    guard export.region == region else {
                        try? FileManager.default.removeItem(atPath: cache.file(for: entry))  // a copy left behind is loaded and refused again
                        throw CommandError("\(entry): the key file is for region \"\(export.region)\", not \"\(region)\" (key-server.conf: region); refusing it")
                    }
                }
            }
            // --config wins over the health authority's configuration.
            let configuration = try options.configuration.config == nil ? keyServer.exposureConfigurationText() : options.configuration.configurationText()
            progress.show(pending.count, "matching \(pending.count) files")
            progress.finish()
            try DaemonDetection(options: options, maxKeys: budget.maxKeys ?? 0)
                .run(paths: pending.map(cache.file(for:)), names: pending, configuration: configuration)
            try cache.markProcessed(pending)
        }
    }

    /// `enctl detect offline`: enctl detects by itself.
    struct Offline: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Detect without the daemon, from a sightings file or an agent database.",
            discussion: """
                enctl reads the sightings from a JSON Lines file (--sightings) or an agent \
                database (--db), checks every key file's signature, matches the keys on all \
                cores, groups the matches into exposure windows and scores them with the v2 \
                configuration (and the v1 one, when --config has v1 keys).

                Every key file must verify against a --public-key; a file that does not stops the \
                command with an error naming it. --insecure-skip-verify accepts unsigned and \
                unverifiable files.
                """)

        @Argument(help: ArgumentHelp("Diagnosis key files (.zip or export.bin).", valueName: "file"), transform: ArgumentValue.inputFile)
        var files: [String] = []

        @Option(name: .customLong("keys"), help: ArgumentHelp("A diagnosis key file (.zip or export.bin). Repeatable.", valueName: "file"),
                transform: ArgumentValue.inputFile)
        var keyFiles: [String] = []

        @Option(help: ArgumentHelp("Sightings, one JSON object per line: {\"rpi\", \"aem\", \"rssi\", \"time\"}, optionally \"adapterAddress\" and \"previousScanTime\".", valueName: "file.jsonl"),
                transform: ArgumentValue.inputFile)
        var sightings: String?

        @Option(help: ArgumentHelp("Read the sightings from an agent database instead: only read, never migrated, no mode changed.", valueName: "path"),
                transform: ArgumentValue.inputFile)
        var db: String?

        @Option(name: .customLong("public-key"),
                help: ArgumentHelp("A trusted public key: a PEM or base64 file, or the base64 text. Repeatable.", valueName: "key"),
                transform: KeyFileInput.trustedKey)
        var publicKeys: [TrustedKey] = []

        @Flag(help: "Accept key files whose signature is missing or does not verify.")
        var insecureSkipVerify = false

        @Option(name: .customLong("rssi-correction"), parsing: .unconditionalSingleValue,
                help: ArgumentHelp("""
                    dB added to every RSSI (-100 to 100), or ADDRESS=dB to the RSSIs of the adapter at that address \
                    (as enagent.conf's rssi-correction.ADDRESS). Repeatable; sightings of an adapter not named, \
                    or of an unknown one, get the plain dB (default 0).
                    """, valueName: "[ADDRESS=]dB"),
                transform: ArgumentValue.rssiCorrection)
        var rssiCorrections: [RssiCorrectionArgument] = []

        @Option(help: ArgumentHelp("Score as of this time, in unix seconds (default: now).", valueName: "seconds"),
                transform: ArgumentValue.integer(in: 0...Int64(UInt32.max) * 600))
        var now: Int64?

        @OptionGroup var size: KeyFileSizeOption

        @OptionGroup var options: DetectionOptions

        func validate() throws {
            guard !(keyFiles + files).isEmpty else { throw ValidationError("Give at least one key file.") }
            guard (sightings == nil) != (db == nil) else { throw ValidationError("Give exactly one of --sightings and --db.") }
            guard !publicKeys.isEmpty || insecureSkipVerify else {
                throw ValidationError("Give the health authority's --public-key to verify the key files (or --insecure-skip-verify).")
            }
        }

        func run() throws {
            let configuration = try loadConfiguration()
            let trusted = publicKeys
            let limits = KeyFileInput.limits(maximumFileSizeMiB: size.maxFileSize)
            // The sightings are read, and their day filters built, on another core while the key
            // files' first keys are read (`ExposureDetector.Keys.readAhead`).
            let sightingsRead = BackgroundWork { [sightings, db] in
                MatchingIndex(try sightings.map(SightingsInput.jsonLines) ?? SightingsInput.database(db!))
            }
            // Each file is opened now (a missing or oversized one refused before any work), and
            // streamed when the matching reaches it: its signature is checked at its end, and a
            // file refused there stops the command before anything is reported.
            let skipVerify = insecureSkipVerify
            let files = try (keyFiles + self.files).map { path in
                let contents = try KeyFileInput.open(path, limits: limits)
                return ExposureDetector.File(name: path, open: { try KeyFileStream(contents, limits: limits) }) { summary in
                    let status = summary.signatureStatus(trustedKeys: trusted)
                    guard status == .verified || skipVerify else {
                        throw CommandError("\(path): the signature is \(status.rawValue); refusing the file (is --public-key the authority's key?)")
                    }
                }
            }
            let keys = ExposureDetector.Keys(files)
            keys.readAhead { !sightingsRead.isDone }
            let recorded = try sightingsRead.result()
            let result: DetectionResult, windows: [ExposureWindow]
            do {
                (result, windows) = try ExposureDetector(index: recorded, rssiCorrections: RssiCorrectionArgument.corrections(rssiCorrections))
                    .exposureWindows(of: keys, configuration: configuration.v2)
            } catch let refusal as KeyFileRefusal {
                throw CommandError(refusal.description)
            }
            let reported = zip(files, result.files).map { file, summary in
                DetectionReport.File(path: file.name, region: summary.region, keyCount: summary.keyCount,
                                     signature: summary.signatureStatus(trustedKeys: trusted))
            }
            let time = now ?? Int64(Date().timeIntervalSince1970)
            let report = DetectionReport(
                files: reported, sightingCount: recorded.sightings.count, keysChecked: result.keysChecked,
                matchedKeyCount: result.matches.count, windows: windows,
                dailySummaries: configuration.v2.dailySummaries(of: windows, now: time),
                v1: configuration.v1.map { v1 in
                    DetectionReport.V1(summary: v1.summary(of: result.matches, now: time), exposureInfos: v1.exposureInfos(of: result.matches, now: time))
                })
            if options.output.json {
                try printJSON(report)
            } else {
                report.printText()
            }
        }

        private func loadConfiguration() throws -> ExposureConfiguration {
            guard let config = options.configuration.config else { return ExposureConfiguration() }
            let text = try InputFile.text(config, what: "an exposure configuration")
            do {
                return try JSONDecoder().decode(ExposureConfiguration.self, from: Data(text.utf8))
            } catch let error as ConfigurationError {
                throw CommandError("\(config): \(error)")
            } catch let error as DecodingError {
                throw CommandError("\(config): not a JSON object (\(error))")
            } catch {
                throw CommandError("\(config): \(error)")
            }
        }
    }
}
