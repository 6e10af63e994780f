import ArgumentParser
import ENAgent
import ENRadio
import ENSystemd
import Glibc

/// enagentd's radio settings; each overrides the configuration file's key of the same name.
struct RadioOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The Bluetooth adapter to use: its controller's address, such as 00:1A:7D:DA:71:13, which stays, or its name, such as hci1, which the kernel gives in the order it finds the controllers (default: the first LE adapter).",
                               valueName: "address|name"),
            transform: checked(AgentConfiguration.Value.adapter))
    var adapter: AdapterChoice?

    @Flag(inversion: .prefixedNo, help: "Switch the adapter on when it is off (default: no).")
    var powerOn: Bool?

    @Option(parsing: .unconditional, help: ArgumentHelp("Advertised TX power in dBm for the metadata, \(TxPower.rangeText), when the controller cannot be asked for it (default: \(TxPower.standardText)).",
                                                        valueName: "dBm"),
            transform: checked(TxPower.value))
    var txPower: Int8?

    @Option(help: ArgumentHelp("Seconds between identifier rotations, as MIN-MAX, random in between (default: \(RotationSeconds.standardText)).", valueName: "min-max"),
            transform: checked(RotationSeconds.value))
    var rotationSeconds: ClosedRange<Int>?

    @Option(help: ArgumentHelp("Length of a scan in seconds, \(ScanSeconds.rangeText) (default: \(ScanSeconds.standardText)).", valueName: "seconds"),
            transform: checked(ScanSeconds.value))
    var scanSeconds: Int?

    @Option(help: ArgumentHelp("Seconds from the start of one scan to the next, at most \(ScanIntervalSeconds.range.upperBound); equal to --scan-seconds scans continuously (default: \(ScanIntervalSeconds.standardText)).",
                               valueName: "seconds"),
            transform: checked(ScanIntervalSeconds.value))
    var scanIntervalSeconds: Int?

    @Flag(inversion: .prefixedNo, help: "Scan passively through a kernel advertisement monitor instead of bluetoothd's active discovery (default: by the kernel: passive on 6.12.80 and later 6.12 kernels and on 7.0 and later, which have the advertisement monitor fixes; active on any other, such as Debian 12's 6.1, which can crash when the adapter goes off while a monitor is being added).")
    var passiveScan: Bool?

    @Flag(inversion: .prefixedNo, help: "Use the radio; --no-radio only keeps keys and the database (default: use it).")
    var radio: Bool?

}

/// One of enagent.conf's checks (AgentConfiguration.Value) as an option's transform: the command
/// line takes exactly what the file takes, and ArgumentParser names the option.
func checked<T>(_ check: @escaping @Sendable (String) throws(AgentConfiguration.InvalidValue) -> T) -> @Sendable (String) throws -> T {
    { text in
        do { return try check(text) } catch { throw ValidationError("\(error)") }
    }
}

/// The radio settings in force: the command line over the configuration file over the defaults.
struct RadioSettings {
    var enabled: Bool
    var adapter: AdapterChoice?
    var powerOn: Bool
    var scan: ScanModeChoice
    var txPower: Int8
    var schedule: RadioSchedule

    /// `kernelRelease` is the running kernel's (`runningKernelRelease`), which sets the scan mode
    /// when neither the command line nor the file does; `timeScale` is --time-scale's (the pause
    /// between scans is bounded on the agent's clock).
    init(options: RadioOptions, file: AgentConfiguration, kernelRelease: String, timeScale: Int = 1) throws {
        let standard = RadioSchedule.standard
        enabled = options.radio ?? file.radio ?? true
        adapter = options.adapter ?? file.adapter
        powerOn = options.powerOn ?? file.powerOn ?? false
        scan = ScanModeChoice(passiveScan: options.passiveScan ?? file.passiveScan, kernelRelease: kernelRelease)
        txPower = options.txPower ?? file.txPower ?? TxPower.standard
        schedule = RadioSchedule(rotationSeconds: options.rotationSeconds ?? file.rotationSeconds ?? standard.rotationSeconds,
                                 scanSeconds: options.scanSeconds ?? file.scanSeconds ?? standard.scanSeconds,
                                 scanIntervalSeconds: options.scanIntervalSeconds ?? file.scanIntervalSeconds ?? standard.scanIntervalSeconds)
        do { try schedule.check(timeScale: timeScale) } catch { throw ValidationError(error.reason) }
    }
}

/// The scan mode in force, and why, for the journal.
struct ScanModeChoice: CustomStringConvertible {
    let mode: BlueZRadio.ScanMode
    let description: String

    /// passive-scan's mode when it is set, else the kernel's (`ScanMode.default(kernelRelease:)`).
    init(passiveScan: Bool?, kernelRelease: String) {
        switch passiveScan {
        case true?:
            mode = .passive
            description = "scanning passively, as configured (passive-scan)"
        case false?:
            mode = .active
            description = "scanning actively through bluetoothd's discovery, as configured (passive-scan)"
        case nil:
            mode = .default(kernelRelease: kernelRelease)
            description = mode == .passive
                ? "scanning passively (kernel \(kernelRelease) has the advertisement monitor fixes)"
                : "scanning actively: kernel \(kernelRelease) is not known to have the advertisement monitor fixes "
                    + "(without them it can crash when an adapter powers off while a monitor is added); "
                    + "passive-scan = yes to scan passively anyway"
        }
    }
}

/// The running kernel's release (uname -r), such as "6.12.117+deb13-amd64".
func runningKernelRelease() -> String {
    var system = utsname()
    guard uname(&system) == 0 else { return "" }
    return withUnsafeBytes(of: &system.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}
