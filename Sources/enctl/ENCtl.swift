import ArgumentParser

@main
struct ENCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enctl",
        abstract: "Control and inspect the enagent Exposure Notification agent.",
        discussion: """
            enctl talks to enagentd, the Exposure Notification service, and offers offline tools \
            for working with the protocol itself.
            """,
        subcommands: [Derive.self])
}
