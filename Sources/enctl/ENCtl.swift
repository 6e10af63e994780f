import ArgumentParser

@main
struct ENCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enctl",
        abstract: "Control and inspect the enagent Exposure Notification agent.",
        discussion: """
            enctl is the command-line companion of enagentd, the Exposure Notification service: \
            it reads and changes the service's state over D-Bus. Anyone may read the status; \
            changing it, exporting keys and detection need root or the group enagent. derive, \
            keys inspect and detect offline work on the protocol itself without the daemon.

            Exit status: 0 on success, 1 on a failure (including enagentd not running or the \
            request not allowed), 64 for a usage error.
            """,
        subcommands: [Status.self, Enable.self, Disable.self, Pause.self, Resume.self, Keys.self, Detect.self,
                      Windows.self, Summary.self, Exposures.self, TestResultCommand.self, Share.self, Watch.self, Reset.self, Derive.self])
}
