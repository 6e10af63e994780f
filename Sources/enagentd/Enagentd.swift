import ArgumentParser
import Dispatch
import ENAgent
import ENBlueZ
import ENBus
import ENCore
import ENStore
import Foundation
import Logging

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
            """)

    @Option(help: ArgumentHelp("The configuration file (default: \(AgentConfiguration.defaultPath), if present).", valueName: "path"))
    var config: String?

    @Option(help: ArgumentHelp("Directory for the database, created with mode 0700 (default: /var/lib/enagent).", valueName: "dir"))
    var stateDir: String?

    @Option(help: ArgumentHelp("Days to keep keys and sightings, 1...365 (default: 14).", valueName: "days"))
    var retentionDays: Int?

    @Flag(help: "Log debug messages.")
    var verbose = false

    @Option(help: ArgumentHelp("Lab only: run the agent's clock this many times faster than real time.", valueName: "factor",
                               visibility: .hidden))
    var timeScale = 1

    @Option(help: ArgumentHelp("Lab only: the unix time from which the faster clock runs (default: start-up).", valueName: "seconds",
                               visibility: .hidden))
    var timeOrigin: Int64?

    @OptionGroup(title: "Radio")
    var radio: RadioOptions

    func validate() throws {
        if let retentionDays, !(1...365).contains(retentionDays) { throw ValidationError("--retention-days must be between 1 and 365.") }
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
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
        let logger = Logger(label: "enagentd")
        let file = try loadConfiguration()
        let radioSettings = try RadioSettings(options: radio, file: file)
        let stateDirectory = stateDir ?? file.stateDirectory ?? "/var/lib/enagent"
        let store: AgentStore
        do {
            store = try AgentStore(path: stateDirectory + "/enagent.db")
        } catch {
            logger.critical("\(error)")
            throw ExitCode.failure
        }
        // Signal handling is in place before READY=1: systemd may stop us right after it.
        let clock: any AgentClock = timeScale > 1
            ? ScaledClock(scale: Double(timeScale), origin: timeOrigin ?? Int64(Date().timeIntervalSince1970)) : SystemClock()
        let retention = RetentionPolicy(days: retentionDays ?? file.retentionDays ?? RetentionPolicy.protocolDefault.days)
        let radioAgent = radioSettings.enabled
            ? try startRadio(radioSettings, store: store, clock: clock, retention: retention, logger: logger) : nil
        let termination = TerminationSignals.handle(on: .main) {
            Systemd.notify("STOPPING=1")
            logger.info("stopping")
            radioAgent?.stop()
            do { try store.close() } catch { logger.error("\(error)") }
            Foundation.exit(0)
        }
        let upkeep = try Upkeep(store: store, clock: clock, retention: retention, logger: logger)
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler {
            do { try upkeep.run() } catch { logger.error("upkeep failed: \(error)") }
        }
        timer.resume()
        Systemd.notify("READY=1\nSTATUS=" + (radioAgent == nil ? "Keeping keys; radio off" : "Advertising and scanning"))
        logger.info("enagentd started", metadata: ["database": "\(store.path)"])
        withExtendedLifetime((timer, termination)) { dispatchMain() }
    }

    /// Connects to BlueZ on the system bus and starts advertising and scanning; follows bluetoothd
    /// and the adapter so that the radio comes back by itself after either goes away.
    private func startRadio(_ settings: RadioSettings, store: AgentStore, clock: any AgentClock, retention: RetentionPolicy,
                            logger: Logger) throws -> RadioAgent {
        let connection: DBusConnection
        do { connection = try DBusConnection.system() } catch {
            logger.critical("cannot connect to the system bus: \(error)")
            throw ExitCode.failure
        }
        let client = BlueZClient(connection: connection)
        let bluez = BlueZRadio(client: client, adapterName: settings.adapter, mayPowerOn: settings.powerOn)
        let agent = RadioAgent(radio: bluez, keys: try KeySchedule(store: store, clock: clock, retention: retention), store: store,
                               clock: clock, schedule: settings.schedule, metadata: Metadata(transmitPower: settings.txPower), logger: logger)
        let subscriptions = try client.followDevices { report in
            guard let data = report.serviceData, report.adapter == bluez.adapterInUse else { return }
            agent.report(RadioReport(serviceData: data, rssi: report.rssi, adapter: report.adapter))
        } + [try client.followService { present in
            if present { agent.radioReturned() } else { logger.warning("bluetoothd left the bus; waiting for it to return") }
        }] + client.followAdapters { agent.radioReturned() }
        Self.keepAlive = (connection, subscriptions)
        agent.start()
        return agent
    }

    /// The bus connection and signal subscriptions live as long as the process.
    nonisolated(unsafe) private static var keepAlive: (DBusConnection, [SignalSubscription])?
}
