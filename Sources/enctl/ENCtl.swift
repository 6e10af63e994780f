import ArgumentParser

@main
struct ENCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enctl",
        abstract: "Control and inspect the enagent Exposure Notification agent.",
        discussion: """
            enctl is the command-line companion of enagentd, the Exposure Notification service. \
            Its offline commands work on the protocol itself and need no running daemon.
            """,
        subcommands: [Derive.self, Detect.self, Keys.self])
}
