import ArgumentParser

/// --json, which every command that prints data takes: the same names and values for the same
/// data in every command (enctl(1), JSON OUTPUT).
struct JSONOutput: ParsableArguments {
    @Flag(help: "Print JSON instead of text (see JSON OUTPUT in enctl(1)).")
    var json = false
}

/// --config, for the commands that score exposures.
struct ConfigurationOption: ParsableArguments {
    @Option(help: ArgumentHelp("Exposure configuration JSON (v2 keys, v1 keys or both; default: the protocol's defaults).", valueName: "file"),
            transform: ArgumentValue.inputFile)
    var config: String?

    /// The configuration's text as the daemon takes it ("" for the defaults).
    func configurationText() throws -> String {
        try config.map { try InputFile.text($0, what: "an exposure configuration") } ?? ""
    }
}
