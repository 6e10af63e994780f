import CENKernel
import ENCore
import ENStore
import Foundation
import TestSupport
import Testing

/// enagentd run as a process, as systemd runs it: readiness, the watchdog, signals, its files.
@Suite struct DaemonProcessTests {
    let directory = TemporaryDirectory()
    let bus: PrivateBus

    init() throws { bus = try PrivateBus() }

    func start(_ arguments: [String], notifySocket: NotifySocket, environment: [String: String] = [:]) throws -> ChildProcess {
        try ChildProcess(Command.executable("enagentd").path, arguments,
                         environment: environment.merging(["NOTIFY_SOCKET": notifySocket.path, "DBUS_SYSTEM_BUS_ADDRESS": bus.address]) { $1 },
                         captureStandardError: true)
    }

    /// This machine's clock may be unsynchronised (no NTP in a container): tests that need keys say so.
    static let trustTheClock = "--no-require-synchronised-clock"

    @Test func reportsReadyKeepsTheDaysKeyAndStopsCleanlyOnSIGTERM() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let state = directory.file("state")
        let daemon = try start(["--state-dir", state, "--no-radio", "--verbose", Self.trustTheClock], notifySocket: notify)
        #expect(notify.await("READY=1"))
        #expect(notify.await("STATUS=consent-required"))
        #expect(try Command.enctl(["enable"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]).status == 0)
        #expect(notify.await("STATUS=active"))

        daemon.terminate()
        #expect(daemon.waitForExit() == 0, "enagentd stops cleanly on SIGTERM")
        #expect(notify.receive(timeout: 5)?.contains("STOPPING=1") == true)
        let walSize = (try? FileManager.default.attributesOfItem(atPath: state + "/enagent.db-wal"))?[.size] as? Int
        #expect((walSize ?? 0) == 0, "the log was checkpointed at shutdown")

        let store = try AgentStore(path: state + "/enagent.db")
        let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart
        let key = try #require(try store.temporaryExposureKey(startingAt: today))
        let log = daemon.standardError()
        #expect(log.contains("enagentd started"))
        #expect(!log.contains(key.keyData.hex), "the log never carries a key")
    }

    @Test func waitsForTheKernelToCallTheClockSynchronisedBeforeMakingKeys() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let state = directory.file("state")
        let daemon = try start(["--state-dir", state, "--no-radio"], notifySocket: notify)
        #expect(notify.await("READY=1"))
        #expect(try Command.enctl(["enable"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]).status == 0)
        let synchronised = cen_kernel_clock_synchronised() == 1
        if synchronised {
            #expect(notify.await("STATUS=active"))
        } else {
            #expect(notify.await("STATUS=clock-unsynchronised"))
        }
        daemon.terminate()
        #expect(daemon.waitForExit() == 0)
        let store = try AgentStore(path: state + "/enagent.db")
        #expect(try !store.temporaryExposureKeys(validAfter: 0).isEmpty == synchronised, "keys only from a synchronised clock")
        if !synchronised { #expect(daemon.standardError().contains("the system clock is not synchronised")) }
    }

    @Test func pingsTheWatchdogAtHalfItsInterval() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let daemon = try start(["--state-dir", directory.file("state"), "--no-radio", Self.trustTheClock], notifySocket: notify,
                               environment: ["WATCHDOG_USEC": "200000"])
        #expect(notify.await("WATCHDOG=1"))
        #expect(notify.await("WATCHDOG=1"), "and again")
        daemon.terminate()
        #expect(daemon.waitForExit() == 0)
    }

    /// The kernel hands the /proc/PID entries of an undumpable process to root whoever runs it: run
    /// as nobody, a dumpable enagentd's memory (/proc/PID/mem) would be nobody's to read.
    @Test func theDaemonIsNotDumpable() throws {
        chmod(directory.path, 0o755)
        let notify = try NotifySocket(path: directory.file("notify"))
        chmod(notify.path, 0o777)
        let state = directory.file("state")
        #expect(mkdir(state, 0o700) == 0 && chown(state, 65534, 65534) == 0)
        let daemon = try ChildProcess("/usr/bin/setpriv",
                                      ["--reuid=65534", "--regid=65534", "--clear-groups", Command.executable("enagentd").path,
                                       "--state-dir", state, "--no-radio"],
                                      environment: ["NOTIFY_SOCKET": notify.path, "DBUS_SYSTEM_BUS_ADDRESS": bus.address], captureStandardError: true)
        #expect(notify.await("READY=1"), "\(daemon.standardError())")
        let processStatus = try String(contentsOfFile: "/proc/\(daemon.processIdentifier)/status", encoding: .utf8)
        #expect(processStatus.contains("\nUid:\t65534\t65534"), "it runs as nobody")
        var entry = stat()
        #expect(stat("/proc/\(daemon.processIdentifier)/mem", &entry) == 0)
        #expect(entry.st_uid == 0, "its memory is root's: not dumpable")
        daemon.terminate()
        #expect(daemon.waitForExit() == 0)
    }

    @Test func anUnusableStateDirectoryIsAClearErrorAndANonZeroExit() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let blocker = directory.file("not-a-directory")
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data()))
        let daemon = try start(["--state-dir", blocker + "/state", "--no-radio"], notifySocket: notify)
        #expect(daemon.waitForExit() == 1)
        let log = daemon.standardError()
        #expect(log.contains("cannot create the directory \(blocker)"), "log: \(log)")
        #expect(log.contains("Not a directory"))
    }

    @Test func theConfigurationFileSetsWhatTheCommandLineLeavesUnset() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let configured = directory.file("configured")
        let configuration = directory.file("enagent.conf")
        try "# a test configuration\nstate-directory = \(configured)\nradio = no\nretention-days = 3\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let daemon = try start(["--config", configuration], notifySocket: notify)
        #expect(notify.await("READY=1"))
        daemon.terminate()
        #expect(daemon.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: configured + "/enagent.db"))

        let overridden = directory.file("overridden")
        let second = try start(["--config", configuration, "--state-dir", overridden], notifySocket: notify)
        #expect(notify.await("READY=1"))
        second.terminate()
        #expect(second.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: overridden + "/enagent.db"), "the command line wins")
    }

    @Test func aBadConfigurationFileIsAUsageErrorNamingTheLine() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let configuration = directory.file("enagent.conf")
        try "radio = no\nscan-seconds = 900\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let daemon = try start(["--config", configuration], notifySocket: notify)
        #expect(daemon.waitForExit() == 64)
        #expect(daemon.standardError().contains("\(configuration):2: scan-seconds must be a whole number from 1 to 300"))
        let missing = try start(["--config", directory.file("absent.conf")], notifySocket: notify)
        #expect(missing.waitForExit() == 64)
        #expect(missing.standardError().contains("cannot read the configuration file"))
    }

    /// systemd restarts the unit on failure, but not for the exit status of a bad configuration,
    /// which no restart mends: the unit must say the status enagentd exits with.
    @Test func theUnitDoesNotRestartAfterAConfigurationError() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let configuration = directory.file("enagent.conf")
        try "tx-power = loud\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let daemon = try start(["--config", configuration], notifySocket: notify)
        let status = try #require(daemon.waitForExit(), "enagentd stops on a bad enagent.conf")
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("systemd/enagentd.service")
        let prevented = try String(contentsOf: unit, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("RestartPreventExitStatus=") }
            .flatMap { $0.dropFirst("RestartPreventExitStatus=".count).split(separator: " ").map(String.init) }
        #expect(status != 0)
        #expect(prevented.contains(String(status)), "enagentd exits \(status) on a bad enagent.conf; the unit prevents restarts for \(prevented)")
    }
}
