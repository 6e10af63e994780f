import ArgumentParser
import ENAgent

/// enagentd's radio settings.
struct RadioOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The Bluetooth adapter to use, such as hci1 (default: the first LE adapter).", valueName: "name"))
    var adapter: String?

    @Flag(help: "Switch the adapter on when it is off.")
    var powerOn = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Advertised TX power in dBm, written into the metadata.", valueName: "dBm"))
    var txPower: Int8 = 0

    @Option(help: ArgumentHelp("Seconds between identifier rotations, as MIN-MAX (random in between).", valueName: "min-max"),
            transform: RadioOptions.range)
    var rotationSeconds: ClosedRange<Int> = RadioSchedule.standard.rotationSeconds

    @Option(help: ArgumentHelp("Length of a scan in seconds.", valueName: "seconds"))
    var scanSeconds = RadioSchedule.standard.scanSeconds

    @Option(help: ArgumentHelp("Seconds from the start of one scan to the next (equal to --scan-seconds: continuous).", valueName: "seconds"))
    var scanIntervalSeconds = RadioSchedule.standard.scanIntervalSeconds

    @Flag(help: "Run without the radio: only keep keys and the database.")
    var noRadio = false

    var schedule: RadioSchedule {
        RadioSchedule(rotationSeconds: rotationSeconds, scanSeconds: scanSeconds, scanIntervalSeconds: scanIntervalSeconds)
    }

    func validate() throws {
        guard rotationSeconds.lowerBound >= 1 else { throw ValidationError("--rotation-seconds must start at 1 or more.") }
        guard scanSeconds >= 1, scanIntervalSeconds >= scanSeconds else {
            throw ValidationError("--scan-seconds must be at least 1 and at most --scan-interval-seconds.")
        }
        guard scanIntervalSeconds <= 300 else { throw ValidationError("--scan-interval-seconds must be at most 300 (see every device within 5 minutes).") }
    }

    static func range(_ text: String) throws -> ClosedRange<Int> {
        let bounds = text.split(separator: "-").compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { throw ValidationError("expected MIN-MAX, e.g. 600-1200") }
        return bounds[0]...bounds[1]
    }
}
