import ENStore
import Foundation
import TestSupport
import Testing

/// Every enctl command with values at and past the edges of what it takes: each is a usage error
/// (exit status 64) naming the option, checked before anything happens: no trap, nothing sent to
/// enagentd, nothing recorded.
@Suite struct BoundaryValueTests {
    let directory = TemporaryDirectory()

    /// The arguments, and what the error must name.
    static func cases(file: String, folder: String) -> [([String], String)] {
        let largest = String(UInt64.max), larger = "1" + String(UInt64.max)
        return [
            (["pause", "0s"], "<duration>"), (["pause", "-1d"], "<duration>"), (["pause", "-1h"], "<duration>"), (["pause", largest + "s"], "<duration>"),
            (["pause", "213503982334601d"], "<duration>"), (["pause", larger + "d"], "<duration>"), (["pause", "367d"], "<duration>"),
            (["pause", ""], "<duration>"),
            (["test-result", "add", "--code", "C", "--date", "1969-12-31"], "--date"),
            (["test-result", "add", "--code", "C", "--date", "2107-01-01"], "--date"),
            (["test-result", "add", "--code", "C", "--date", "0"], "--date"),
            (["test-result", "add", "--code", ""], "--code"),
            (["test-result", "add", "--card", folder + "/missing.shc"], "--card"), (["test-result", "add", "--card", folder], "--card"),
            (["test-result", "add", "--code", "C", "--issuers-dir", file], "--issuers-dir"),
            (["test-result", "add", "--code", "C", "--server-config", folder], "--server-config"),
            (["test-result", "verify", folder], "<file>"), (["test-result", "verify", file, "--issuer-keys", folder], "--issuer-keys"),
            (["share", "--test-result", ""], "--test-result"), (["share", "--server-config", folder + "/missing.conf"], "--server-config"),
            (["keys", "export", "--out", folder], "--out"), (["keys", "export", "--out", folder + "/missing/keys.json"], "--out"),
            (["keys", "export", "--format", "pdf"], "--format"),
            (["keys", "inspect", folder], "<file>"), (["keys", "inspect", ""], "<file>"),
            (["keys", "inspect", file, "--max-file-size", "0"], "--max-file-size"),
            (["keys", "inspect", file, "--max-file-size", String(Int.max)], "--max-file-size"),
            (["keys", "inspect", file, "--max-file-size", larger], "--max-file-size"),
            (["keys", "sign", file, "--private-key", folder, "--key-id", "1", "--out", folder + "/signed.zip"], "--private-key"),
            (["keys", "sign", file, "--private-key", file, "--key-id", "", "--out", folder + "/signed.zip"], "--key-id"),
            (["keys", "sign", file, "--private-key", file, "--key-id", "1", "--out", folder], "--out"),
            (["detect", "files", folder + "/missing.zip"], "<file>"), (["detect", "files", folder], "<file>"),
            (["detect", "files", file, "--max-keys", "0"], "--max-keys"), (["detect", "files", file, "--max-keys", larger], "--max-keys"),
            (["detect", "files", file, "--config", folder], "--config"),
            (["detect", "server", "--cache-dir", ""], "--cache-dir"), (["detect", "server", "--max-file-size", "-1"], "--max-file-size"),
            (["detect", "offline", "--db", folder, "--keys", file, "--insecure-skip-verify"], "--db"),
            (["detect", "offline", "--sightings", folder + "/missing.jsonl", "--keys", file, "--insecure-skip-verify"], "--sightings"),
            (["detect", "offline", "--sightings", file, "--keys", folder, "--insecure-skip-verify"], "--keys"),
            (["detect", "offline", "--sightings", file, "--keys", file, "--insecure-skip-verify", "--now", "-1"], "--now"),
            (["detect", "offline", "--sightings", file, "--keys", file, "--insecure-skip-verify", "--now", String(Int64.max)], "--now"),
            (["detect", "offline", "--sightings", file, "--keys", file, "--public-key", folder], "--public-key"),
            (["keys", "inspect", file, "--public-key", folder + "/missing.pem"], "--public-key"), (["keys", "inspect", file, "--public-key", ""], "--public-key"),
            (["summary", "--config", folder], "--config"),
            (["derive", "--tek", "", "--interval", "0"], "--tek"),
            (["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "-1"], "--interval"),
            (["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "4294967296"], "--interval"),
            (["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "0", "--count", "0"], "--count"),
            (["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "4294967295", "--count", "2"], "4294967295"),
            (["derive", "--tek", "75c734c6dd1a782de7a965da5eb93125", "--interval", "0", "--count", String(Int.max)], "--count"),
        ]
    }

    @Test func everyCommandRefusesValuesPastItsEdgesBeforeDoingAnything() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let file = directory.file("some-file")
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        for (arguments, named) in Self.cases(file: file, folder: directory.path) {
            let result = try Command.enctl(arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
            #expect(result.status == 64, "enctl \(arguments): exit \(result.status), \(result.standardError)")
            #expect(result.standardError.contains(named), "enctl \(arguments) does not name \(named): \(result.standardError)")
        }
        // Bytes that are not UTF-8, through a shell: Swift's strings cannot hold them.
        for option in ["--code", "--date"] {
            let result = try Command.run("/bin/sh", ["-c", #"exec "$0" test-result add --code C \#(option) "$(printf 'A\377')""#, Command.executable("enctl").path],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
            #expect(result.status == 64 && result.standardError.contains(option), "\(option): exit \(result.status), \(result.standardError)")
        }
        let status = try service.status()
        #expect(status["status"] as? String == "active" && status["pausedUntil"] as? Int == 0, "no pause was sent: \(status)")
        #expect(try AgentStore(path: service.state + "/enagent.db").testResults().isEmpty, "no test result was recorded")
        #expect(!FileManager.default.fileExists(atPath: directory.file("signed.zip")))
    }

    /// The longest pause enctl takes is the daemon's clamp, and what it prints is what the daemon applied.
    @Test func theLongestPauseIsTheDaemonsAndEnctlSaysWhatWasApplied() throws {
        let service = try ServiceTests.Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let result = try service.enctl("pause", "366d")
        #expect(result.status == 0, "\(result.standardError)")
        let until = try #require(try service.status()["pausedUntil"] as? Int)
        #expect(abs(until - Int(Date().timeIntervalSince1970) - 366 * 86_400) < 30)
        let printed = Date(timeIntervalSince1970: TimeInterval(until)).formatted(.iso8601.year().month().day())
        #expect(result.standardOutput.contains("Paused until \(printed)"), "\(result.standardOutput)")
        // A caller of the API past the clamp: the journal says what was applied.
        _ = try service.call("Pause", [.uint64(UInt64.max)])
        service.daemon.terminate()
        service.daemon.waitForExit()
        let journal = service.daemon.standardError()
        #expect(journal.contains("paused for \(366 * 86_400) s") && journal.contains("\(UInt64.max) s were asked for"), "\(journal)")
    }
}
