import ArgumentParser
import Dispatch
import ENAgent
import ENStore
import Foundation
import Logging

@main
struct Enagentd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enagentd",
        abstract: "The enagent Exposure Notification service.",
        discussion: """
            Keeps the device's Temporary Exposure Keys (a new one every UTC day, persisted before \
            use) and its database of sightings, and deletes both after the retention period. \
            Usually started by systemd; stops cleanly on SIGTERM or SIGINT.
            """)

    @Option(help: ArgumentHelp("Directory for the database (created with mode 0700).", valueName: "dir"))
    var stateDir = "/var/lib/enagent"

    @Option(help: ArgumentHelp("Days to keep keys and sightings.", valueName: "days"))
    var retentionDays = RetentionPolicy.protocolDefault.days

    @Flag(help: "Log debug messages.")
    var verbose = false

    func validate() throws {
        guard (1...365).contains(retentionDays) else { throw ValidationError("--retention-days must be between 1 and 365.") }
    }

    func run() throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
        let logger = Logger(label: "enagentd")
        let store: AgentStore
        do {
            store = try AgentStore(path: stateDir + "/enagent.db")
        } catch {
            logger.critical("\(error)")
            throw ExitCode.failure
        }
        // Signal handling is in place before READY=1: systemd may stop us right after it.
        let termination = TerminationSignals.handle(on: .main) {
            Systemd.notify("STOPPING=1")
            logger.info("stopping")
            do { try store.close() } catch { logger.error("\(error)") }
            Foundation.exit(0)
        }
        let upkeep = try Upkeep(store: store, clock: SystemClock(), retention: RetentionPolicy(days: retentionDays), logger: logger)
        try upkeep.run()
        let timer = DispatchSource.makeTimerSource(queue: .main)
        timer.schedule(deadline: .now() + Upkeep.period, repeating: Upkeep.period)
        timer.setEventHandler {
            do { try upkeep.run() } catch { logger.error("upkeep failed: \(error)") }
        }
        timer.resume()
        Systemd.notify("READY=1\nSTATUS=Keeping keys; no radio support in this build")
        logger.info("enagentd started", metadata: ["database": "\(store.path)"])
        withExtendedLifetime((timer, termination)) { dispatchMain() }
    }
}
