import ArgumentParser
import CENKernel
import Dispatch
import ENAgent
import ENAPI
import ENBus
import ENCore
import ENKeyFiles
import ENStore
import FoundationEssentials
import Glibc
import ENSystemd

@main
struct Enagentd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enagentd",
        abstract: "The enagent Exposure Notification service.",
        discussion: """
            Advertises the device's rotating Exposure Notification identifier through BlueZ, scans \
            for other devices and records every sighting. Keeps the device's Temporary Exposure \
            Keys (a new one every UTC day, stored before use) and deletes keys and sightings after \
            the retention period. Usually started by systemd; stops cleanly on SIGTERM or SIGINT.

            Exit status: 0 after a clean stop (SIGTERM, SIGINT); 1 when it cannot start or go \
            on (the database, the bus; the journal says why), which systemd restarts; 64 for a \
            bad command line or enagent.conf, naming the option or the file's line, which a \
            restart cannot mend (the unit's RestartPreventExitStatus=64).
            """,
        version: ExposureNotificationAPI.packageVersion)

    @Option(help: ArgumentHelp("The configuration file (default: \(AgentConfiguration.defaultPath), if present).", valueName: "path"))
    var config: String?

    @Option(help: ArgumentHelp("Directory for the database, an absolute path, created with mode 0700 (default: /var/lib/enagent).", valueName: "dir"),
            transform: checked(AgentConfiguration.Value.absolutePath))
    var stateDir: String?

    @Option(help: ArgumentHelp("Days to keep keys and sightings, \(RetentionDays.rangeText) (default: \(RetentionDays.standardText)).", valueName: "days"),
            transform: checked(RetentionDays.value))
    var retentionDays: Int?

    @Option(help: ArgumentHelp("MiB kept free on the database's disk for keys and consent, \(DiskReserveMebibytes.rangeText); below it sightings wait in memory (default: \(DiskReserveMebibytes.standardText)).",
                               valueName: "MiB"),
            transform: checked(DiskReserveMebibytes.value))
    var diskReserveMb: Int?

    @Flag(help: "Log debug messages.")
    var verbose = false

    @Option(help: ArgumentHelp("Lab only: run the agent's clock this many times faster than real time.", valueName: "factor",
                               visibility: .hidden))
    var timeScale = 1

    @Option(help: ArgumentHelp("Lab only: the unix time from which the faster clock runs (default: start-up).", valueName: "seconds",
                               visibility: .hidden))
    var timeOrigin: Int64?

    @Flag(inversion: .prefixedNo,
          help: "Wait until NTP has synchronised the system clock before making keys or recording sightings (default: yes).")
    var requireSynchronisedClock: Bool?

    @Option(help: ArgumentHelp("Lab only: offer the D-Bus API on this bus instead of the system bus.", valueName: "address",
                               visibility: .hidden))
    var apiBus: String?

    @OptionGroup(title: "Radio")
    var radio: RadioOptions

    func validate() throws {
        guard (1...3_600).contains(timeScale) else { throw ValidationError("--time-scale must be between 1 and 3600.") }
    }

    /// The configuration file: the one named, else the default one if it exists.
    private func loadConfiguration() throws -> AgentConfiguration {
        let path = config ?? AgentConfiguration.defaultPath
        guard let data = FileManager.default.contents(atPath: path) else {
            if config == nil { return AgentConfiguration() }
            throw ValidationError("cannot read the configuration file \(path)")
        }
        do {
            return try AgentConfiguration(text: String(decoding: data, as: UTF8.self), path: path)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() throws {
        let residency = Result { () throws(CodeResidencyError) in try CodeResidency() }
        // Before the first key is read: a core dump or a debugger must not carry keys away.
        let undumpable = cen_make_undumpable() == 0
        let logger = Logger(label: "enagentd", level: verbose ? .debug : .info)
        if !undumpable { logger.warning("cannot mark the process undumpable: a core dump could hold keys") }
        let file = try loadConfiguration()
        let radioSettings = try RadioSettings(options: radio, file: file, kernelRelease: runningKernelRelease(), timeScale: timeScale)
        let stateDirectory = stateDir ?? file.stateDirectory ?? "/var/lib/enagent"
        let store: AgentStore
        let serviceBus: DBusConnection, radioBus: DBusConnection?
        let trustedKeysDirectory = file.trustedKeysDirectory ?? TrustedKeysDirectory.defaultPath
        // Read at each detection: the package starts enagentd before the authority's key is in place.
        let trustedKeys = TrustedKeySource {
            let keys = try TrustedKeysDirectory.load(trustedKeysDirectory)
            logger.info("detection trusts \(keys.count) key(s) from \(trustedKeysDirectory)")
            return keys
        }
        do {
            store = try AgentStore(path: stateDirectory + "/enagent.db",
                                   diskReserve: DiskReserve(mebibytes: diskReserveMb ?? file.diskReserveMebibytes ?? DiskReserveMebibytes.standard))
            // The API has a connection of its own, so that a long detection never holds up BlueZ's signals.
            serviceBus = try apiBus.map { address throws(DBusError) in try DBusConnection(address: address) } ?? DBusConnection.system()
            radioBus = radioSettings.enabled ? try DBusConnection.system() : nil
        } catch {
            logger.critical("\(error)")
            throw ExitCode.failure
        }
        let clock: any AgentClock = timeScale > 1
            ? ScaledClock(scale: Double(timeScale), origin: timeOrigin ?? Int64(Date().timeIntervalSince1970)) : SystemClock()
        let retention = RetentionPolicy(days: retentionDays ?? file.retentionDays ?? RetentionDays.standard)
        let requireSynchronisedClock = self.requireSynchronisedClock ?? file.requireSynchronisedClock ?? true
        let synchronisation: (any ClockSynchronisation)? = requireSynchronisedClock ? KernelClockSynchronisation() : nil
        let radio = radioBus.map { RadioStarter.bluez(bus: $0, settings: radioSettings, store: store, clock: clock, retention: retention, logger: logger) }
        // Read at each detection too; a file refused leaves the last good one in force.
        let riskConfiguration = RiskConfigurationSource(path: file.riskConfiguration ?? RiskConfigurationSource.defaultPath) { logger.warning("\($0)") }
        let daemon = Daemon(store: store, clock: clock, retention: retention, synchronisation: synchronisation, radio: radio,
                            trustedKeys: trustedKeys, rssiCorrections: file.rssiCorrections, riskConfiguration: riskConfiguration, logger: logger)
        let object = ExposureNotificationService(daemon: daemon, bus: serviceBus, logger: logger).object()
        daemon.announceChanges(through: object)
        // A caller flooding the API is refused beyond 200 calls at once and 100 a second, so that
        // the calls of others queued behind the flood are answered soon.
        serviceBus.limitCalls(CallBudget(burst: 200, perSecond: 100))
        // The reminders are judged before the name is taken: a client that asks as soon as
        // enagentd appears gets them, and a change of those that tell of health is never announced.
        daemon.startReminders()
        do {
            try serviceBus.export(object)
            try serviceBus.requestName(ExposureNotificationAPI.busName)
        } catch {
            logger.critical("cannot offer \(ExposureNotificationAPI.busName) on the system bus: \(error) (is the bus policy installed? see dbus/)")
            throw ExitCode.failure
        }
        // Signal handling is in place before READY=1: systemd may stop us right after it.
        let termination = TerminationSignals.handle(on: .main) {
            Systemd.notify("STOPPING=1")
            logger.info("stopping")
            daemon.stop()
            Glibc.exit(0)
        }
        let gate = ClockGate(synchronisation: synchronisation, clock: clock, queue: .main)
        Systemd.notify("READY=1")
        logger.info("enagentd started", metadata: ["database": "\(store.path)"])
        if radioSettings.enabled { logger.info("\(radioSettings.scan)") }
        DispatchQueue.main.async { daemon.apply() }
        if !gate.isOpen { logger.warning("the system clock is not synchronised: no keys and no sightings until it is") }
        gate.whenOpen { daemon.clockBecameTrusted() }
        let watchdog = Watchdog.start(on: .main) { daemon.isHealthy }
        let clockChanges = ClockChanges(queue: .main) { daemon.clockWasSet() }
        if clockChanges == nil { logger.info("cannot hear the clock being set (timerfd): a step is noticed within a minute") }
        let codeDrops: (any DispatchSourceTimer)?
        switch residency {
        case .success(let residency):
            codeDrops = residency.schedule(on: .main) { logger.info("code touched once stays resident (more memory, nothing else): \($0)") }
        case .failure(let error):
            codeDrops = nil
            logger.info("code touched once stays resident (more memory, nothing else): \(error)")
        }
        withExtendedLifetime((termination, watchdog, clockChanges, codeDrops)) { dispatchMain() }
    }
}
