import ArgumentParser


struct ENCtl: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enctl", abstract: "x", subcommands: [])
}
