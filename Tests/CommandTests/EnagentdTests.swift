import ENCore
import ENStore
import Foundation
import TestSupport
import Testing

@Suite struct EnagentdTests {
    let directory = TemporaryDirectory()

    func start(_ arguments: [String], notifySocket: NotifySocket) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = Command.executable("enagentd")
        process.arguments = arguments
        process.environment = ["NOTIFY_SOCKET": notifySocket.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        return (process, errors)
    }

    /// Waits at most `seconds` for `process` to end; kills it and fails the test otherwise.
    func waitForExit(_ process: Process, seconds: Double = 20) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            Issue.record("enagentd did not exit within \(seconds) s")
        }
    }

    @Test func reportsReadyKeepsTheDaysKeyAndStopsCleanlyOnSIGTERM() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let state = directory.file("state")
        let (daemon, errors) = try start(["--state-dir", state], notifySocket: notify)
        let ready = try #require(notify.receive(timeout: 20))
        #expect(ready.contains("READY=1"))
        #expect(ready.contains("STATUS="))

        daemon.terminate()
        try waitForExit(daemon)
        #expect(daemon.terminationStatus == 0)
        #expect(notify.receive(timeout: 5)?.contains("STOPPING=1") == true)
        let walSize = (try? FileManager.default.attributesOfItem(atPath: state + "/enagent.db-wal"))?[.size] as? Int
        #expect((walSize ?? 0) == 0, "the log was checkpointed at shutdown")

        let store = try AgentStore(path: state + "/enagent.db")
        let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart
        let key = try #require(try store.temporaryExposureKey(startingAt: today))
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("enagentd started"))
        #expect(!log.contains(key.keyData.hex), "the log never carries a key")
    }

    @Test func anUnusableStateDirectoryIsAClearErrorAndANonZeroExit() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let blocker = directory.file("not-a-directory")
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data()))
        let (daemon, errors) = try start(["--state-dir", blocker + "/state"], notifySocket: notify)
        try waitForExit(daemon)
        #expect(daemon.terminationStatus != 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("cannot create the directory \(blocker)"), "log: \(log)")
        #expect(log.contains("Not a directory"))
    }
}
