import ArgumentParser
import ENAPI
import FoundationEssentials
import Glibc

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

            JSON OUTPUT: with --json every command that takes it prints the same data under the same names \
            and with the same values: the EN API's names in camelCase (reportType, \
            infectiousness, calibrationConfidence, scanInstances with minAttenuation, \
            typicalAttenuation and secondsSinceLastScan), report types and infectiousness by \
            name (confirmedTest, confirmedClinicalDiagnosis, selfReport, recursive, unknown; \
            high, standard, none), days as YYYY-MM-DD (UTC days, as the protocol dates \
            exposures), times in unix seconds, attenuations in dB, durations in seconds unless \
            the name says Minutes (v1's ExposureInfo). An exposure window from \
            windows and from detect offline is one object; detect offline adds the matched key \
            under "key". Keys are sorted, output is indented.
            """,
        version: ExposureNotificationAPI.packageVersion,
        subcommands: [Status.self, Enable.self, Disable.self, Pause.self, Resume.self, Keys.self, Detect.self,
                      Windows.self, Summary.self, Exposures.self, Risk.self, Sightings.self, TestResultCommand.self, Share.self, Watch.self, Reset.self, Derive.self])

    static func main() {
        // ArgumentParser reads `pause -1h` as the flags -1 and -h, and shows the help with exit
        // status 0: a negative duration is refused as a usage error like any other bad one.
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "pause", let negative = arguments.dropFirst().first(where: { $0.hasPrefix("-") && $0.dropFirst().first?.isNumber == true }) {
            StandardStream.error.write("Error: The value '\(negative)' is invalid for '<duration>': a pause cannot be negative\n"
                                       + "See 'enctl pause --help' for more information.\n")
            Glibc.exit(ExitCode.validationFailure.rawValue)
        }
        main(nil)
    }
}
