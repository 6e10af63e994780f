import ENCore
import ENStore
import Foundation
import TestSupport
import Testing

@Suite struct EnagentdTests {
    let directory = TemporaryDirectory()

    func start(_ arguments: [String], notifySocket: NotifySocket) throws -> ChildProcess {
        try ChildProcess(Command.executable("enagentd").path, arguments, environment: ["NOTIFY_SOCKET": notifySocket.path],
                         captureStandardError: true)
    }

    @Test func reportsReadyKeepsTheDaysKeyAndStopsCleanlyOnSIGTERM() throws {
        let notify = try NotifySocket(path: directory.file("notify"))
        let state = directory.file("state")
        let daemon = try start(["--state-dir", state, "--no-radio"], notifySocket: notify)
        let ready = try #require(notify.receive(timeout: 20))
        #expect(ready.contains("READY=1"))
        #expect(ready.contains("STATUS="))

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
}
