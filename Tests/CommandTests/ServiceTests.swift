import ENAPI
import ENBus
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Synchronization
import Testing

/// enagentd's D-Bus API through enctl and a raw bus connection, on a private dbus-daemon.
@Suite struct ServiceTests {
    let directory = TemporaryDirectory()

    /// A running enagentd without a radio, on its own bus, with `configuration` as its file.
    final class Service {
        let bus: PrivateBus
        let daemon: ChildProcess
        let notify: NotifySocket
        let state: String

        init(in directory: TemporaryDirectory, policy: String = PrivateBus.permissivePolicy, configuration: String = "") throws {
            bus = try PrivateBus(policy: policy)
            notify = try NotifySocket(path: directory.file("notify-\(UInt32.random(in: 0...UInt32.max))"))
            state = directory.file("state")
            let file = directory.file("enagent.conf")
            try "radio = no\nrequire-synchronised-clock = no\nstate-directory = \(state)\n\(configuration)"
                .write(toFile: file, atomically: true, encoding: .utf8)
            daemon = try ChildProcess(Command.executable("enagentd").path, ["--config", file],
                                      environment: ["NOTIFY_SOCKET": notify.path, "DBUS_SYSTEM_BUS_ADDRESS": bus.address], captureStandardError: true)
            guard notify.await("READY=1") else { throw POSIXError(.ETIMEDOUT) }
        }

        deinit {
            daemon.terminate()
            daemon.waitForExit()
        }

        func enctl(_ arguments: String...) throws -> Command.Result {
            try Command.enctl(arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        }

        func status() throws -> [String: Any] {
            let result = try enctl("status", "--json")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any], "\(result.standardError)")
        }

        /// An enabled service that trusts key files signed by `signer` (its key in `directory`/trusted-keys/`name`).
        static func enabled(in directory: TemporaryDirectory, trusting signer: P256PrivateKey, as name: String = "authority.pem",
                            configuration: String = "") throws -> Service {
            let keys = directory.file("trusted-keys")
            try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
            try signer.publicKey.pem.write(toFile: keys + "/" + name, atomically: true, encoding: .utf8)
            let service = try Service(in: directory, configuration: "trusted-keys-directory = \(keys)\n" + configuration)
            guard try service.enctl("enable").status == 0 else { throw POSIXError(.EPERM) }
            return service
        }

        /// Puts the key of `daysAgo` days ago (rolled, so it may be shared) into the daemon's store.
        func insertRolledKey(daysAgo: UInt32 = 1) throws -> TemporaryExposureKey {
            let store = try AgentStore(path: state + "/enagent.db")
            let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart
            let key = TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                           rollingStartIntervalNumber: ENIntervalNumber(today.rawValue - 144 * daysAgo))
            return try store.insertTemporaryExposureKeyIfAbsent(key, createdAt: key.rollingStartIntervalNumber.unixSeconds)
        }

        func call(_ method: String, _ arguments: [DBusValue] = []) throws(DBusError) -> [DBusValue] {
            let connection = try DBusConnection(address: bus.address)
            return try connection.call(destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                                       interface: "org.enagent.ExposureNotification1", member: method, arguments)
        }
    }

    @Test func consentPauseResumeAndDisableDriveTheStatus() throws {
        let service = try Service(in: directory)
        #expect(try service.status()["status"] as? String == "consent-required")
        #expect(try service.enctl("enable").status == 0)
        #expect(try service.status()["status"] as? String == "active")
        #expect(try service.status()["enabled"] as? Bool == true)
        let store = try AgentStore(path: service.state + "/enagent.db")
        #expect(try store.currentConsent()?.granted == true, "enabling recorded consent")

        #expect(try service.enctl("pause", "30m").status == 0)
        let paused = try service.status()
        #expect(paused["status"] as? String == "paused")
        let until = try #require(paused["pausedUntil"] as? Int)
        #expect(abs(until - Int(Date().timeIntervalSince1970) - 1_800) < 30)
        let resumed = try service.enctl("resume", "--json")
        #expect(resumed.status == 0 && resumed.standardOutput.contains("\"status\" : \"active\""), "--json prints the status after the change")

        #expect(try service.enctl("disable").status == 0)
        #expect(try service.status()["status"] as? String == "disabled")
        #expect(try service.status()["reminders"] as? [String] == [], "no reminder while disabled")
        #expect(try store.currentConsent()?.granted == false)
        #expect(try service.enctl("pause", "soon").status == 64, "a bad duration is a usage error")
    }

    @Test func aPauseSurvivesARestartOfTheDaemon() throws {
        var service: Service? = try Service(in: directory)
        #expect(try service!.enctl("enable").status == 0)
        #expect(try service!.enctl("pause", "8h").status == 0)
        let until = try #require(try service!.status()["pausedUntil"] as? Int)
        service = nil  // enagentd stops
        let restarted = try Service(in: directory)
        let status = try restarted.status()
        #expect(status["status"] as? String == "paused")
        #expect(status["pausedUntil"] as? Int == until)
        #expect(try restarted.enctl("status").standardOutput.contains("Paused until"))
    }

    @Test func detectionOverdueIsRemindedADayAfterEnabling() throws {
        let store = try AgentStore(path: directory.file("state") + "/enagent.db")
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: Int64(Date().timeIntervalSince1970) - 2 * 86_400))
        try store.close()
        let service = try Service(in: directory)
        #expect(try service.status()["reminders"] as? [String] == ["detection-overdue"])
        #expect(try service.enctl("status").standardOutput.contains("no exposure detection has succeeded for more than 24 hours"))
        service.daemon.terminate()
        service.daemon.waitForExit()
        #expect(service.daemon.standardError().contains("no exposure detection has succeeded"), "and the journal says so")
    }

    @Test func keysAreReleasedWithConfirmationAndNeverTodays() throws {
        let service = try Service(in: directory)
        #expect(try service.enctl("enable").status == 0)
        let yesterday = try service.insertRolledKey()
        let store = try AgentStore(path: service.state + "/enagent.db")
        let today = ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart
        #expect(try store.temporaryExposureKey(startingAt: today) != nil, "the daemon made today's key")

        #expect(throws: DBusError.self) { try service.call("GetTemporaryExposureKeyHistory", [.boolean(false)]) }
        do {
            _ = try service.call("GetTemporaryExposureKeyHistory", [.boolean(false)])
        } catch {
            #expect(error.name == "org.enagent.ExposureNotification1.Error.ConfirmationRequired")
        }
        let result = try service.enctl("keys", "export", "--yes")
        #expect(result.status == 0)
        let upload = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let keys = try #require(upload["temporaryExposureKeys"] as? [[String: Any]])
        #expect(keys.count == 1)
        #expect(keys.first?["keyData"] as? String == Data(yesterday.keyData.bytes).base64EncodedString())
        #expect(keys.first?["rollingStartNumber"] as? Int == Int(yesterday.rollingStartIntervalNumber.rawValue))

        let zip = directory.file("keys.zip")
        #expect(try service.enctl("keys", "export", "--yes", "--format", "zip", "--out", zip).status == 0)
        let zipMode = try FileManager.default.attributesOfItem(atPath: zip)[.posixPermissions] as? Int
        #expect(zipMode == 0o600, "the keys file is readable by its owner only")
        let export = try KeyExport(contentsOf: Data(contentsOf: URL(fileURLWithPath: zip)))
        var exported = [TemporaryExposureKey]()
        try export.forEachKey { key, _ in exported.append(key.key) }
        #expect(exported.map(\.keyData) == [yesterday.keyData])

        #expect(try service.enctl("reset", "--yes").status == 0)
        #expect(try store.temporaryExposureKeys(validAfter: 0).allSatisfy { $0.rollingStartIntervalNumber == today },
                "reset erased the old key; the running agent made a fresh one for today")
        #expect(try store.temporaryExposureKey(startingAt: today)?.keyData != nil)
    }

    /// enagent.conf's RSSI corrections reach the daemon's detection (a stronger corrected RSSI is
    /// a lower attenuation) and `enctl status`: an adapter's own for its sightings, the default for
    /// those of an adapter not named or of unknown address.
    @Test func theRssiCorrectionsOfTheConfigurationAreUsedAndShown() throws {
        let signer = try P256PrivateKey()
        let start = ENIntervalNumber(ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue - 144)
        let met = try Broadcaster(start: start.rawValue)
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        let file = directory.file("export.zip")
        try writer.zip(keys: [met.key]).write(to: URL(fileURLWithPath: file))
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), other = try #require(BluetoothAddress("B8:27:EB:00:00:02"))
        let service = try Service.enabled(in: directory, trusting: signer, configuration: "rssi-correction = 15\nrssi-correction.\(dongle) = -5\n")
        let status = try service.status()
        #expect(status["rssiCorrection"] as? Int == 15)
        let adapters = try #require(status["adapterRssiCorrections"] as? [[String: Any]])
        #expect(adapters.count == 1 && adapters.first?["address"] as? String == "00:1A:7D:DA:71:13" && adapters.first?["name"] as? String == ""
                && adapters.first?["rssiCorrection"] as? Int == -5 && adapters.first?["configured"] as? Bool == true, "\(adapters)")
        let text = try service.enctl("status").standardOutput.split(separator: "\n")
        #expect(text.contains { $0.hasPrefix("RSSI correction ") && $0.hasSuffix(" +15 dB by default") }, "\(text)")
        #expect(text.contains { $0.hasPrefix("  00:1A:7D:DA:71:13 ") && $0.hasSuffix(" -5 dB (not in use)") }, "\(text)")

        try AgentStore(path: service.state + "/enagent.db").record([nil, dongle, other].enumerated().map { scan, address in
            try met.sighting(at: met.start + 3_600 + Int64(scan) * 60, rssi: -70, adapterAddress: address)
        })
        let detected = try service.enctl("detect", file)
        #expect(detected.status == 0, "\(detected.standardError)")
        let windows = try service.enctl("windows", "--json")
        let listed = try JSONSerialization.jsonObject(with: Data(windows.standardOutput.utf8))
        let rows = try #require(listed as? [[String: Any]])
        let scans = try #require(rows.first?["scanInstances"] as? [[String: Any]])
        // TX power -10: the default -10 - (-70 + 15) = 45; the dongle's -10 - (-70 - 5) = 65.
        #expect(scans.map { $0["minAttenuation"] as? Int } == [45, 65, 45])
    }

    /// `enctl sightings`: every hour from the first sighting to the current one, those without a
    /// sighting as zeros; --hours keeps the latest; on a terminal each hour gets a bar.
    @Test func sightingsArePrintedPerHourWithABarOnATerminal() throws {
        let service = try Service(in: directory)
        let current = Int64(Date().timeIntervalSince1970) / 3_600 * 3_600
        let met = try Broadcaster(), other = try Broadcaster()
        try AgentStore(path: service.state + "/enagent.db").record(try [
            met.sighting(at: current - 3 * 3_600 + 10, rssi: -60), met.sighting(at: current - 3 * 3_600 + 70, rssi: -60),
            other.sighting(at: current - 3 * 3_600 + 80, rssi: -70), met.sighting(at: current - 3_600 + 5, rssi: -60),
        ])

        let json = try service.enctl("sightings", "--json")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Int]], "\(json.standardError)")
        #expect(rows.map { $0["hourStart"] } == (0...3).map { Int(current - 3 * 3_600) + $0 * 3_600 })
        #expect(rows.map { $0["sightings"] } == [3, 0, 1, 0])
        #expect(rows.map { $0["distinctIdentifiers"] } == [2, 0, 1, 0])

        let latest = try service.enctl("sightings", "--hours", "2")
        let lines = latest.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[0].hasPrefix("HOUR (UTC)"), "\(latest.standardOutput)\(latest.standardError)")
        #expect(lines.dropFirst().map { $0.split(separator: " ").dropFirst(2).map(String.init) } == [["1", "1"], ["0", "0"]], "\(lines)")
        #expect(!latest.standardOutput.contains("█"), "no bars into a pipe")

        let terminal = try Command.run("/usr/bin/script", ["-qec", Command.executable("enctl").path + " sightings", "/dev/null"],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        let bars = terminal.standardOutput.split(whereSeparator: \.isNewline).dropFirst().map { $0.filter { $0 == "█" }.count }
        #expect(bars == [40, 0, 13, 0], "the largest hour is 40 blocks, the others in proportion: \(terminal.standardOutput)\(terminal.standardError)")
        #expect(try service.enctl("sightings", "--hours", "0").status == 64)
    }

    @Test func detectionTakesDescriptorsVerifiesAndStoresWindows() throws {
        let signer = try P256PrivateKey()
        let service = try Service.enabled(in: directory, trusting: signer)

        let now = Int64(Date().timeIntervalSince1970)
        let start = ENIntervalNumber(ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue - 2 * 144)
        let met = try Broadcaster(start: start.rawValue, risk: 4)
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.record(try (0..<10).map { try met.sighting(at: met.start + 7_200 + Int64($0) * 60, rssi: -60) })
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        let file = directory.file("export.zip")
        try writer.zip(keys: [met.key, try Broadcaster(start: start.rawValue).key]).write(to: URL(fileURLWithPath: file))

        let result = try service.enctl("detect", file, "--json")
        #expect(result.status == 0, "\(result.standardError)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Int])
        #expect(summary["KeyFilesProcessed"] == 1 && summary["KeysChecked"] == 2 && summary["MatchedKeys"] == 1)
        #expect(summary["NewExposureWindows"] == 1)
        let again = try service.enctl("detect", file, "--json")
        #expect(again.standardOutput.contains("\"KeyFilesSkipped\" : 1"), "a file processed before is skipped")

        let windows = try service.enctl("windows", "--json")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(windows.standardOutput.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect((rows.first?["scanInstances"] as? [Any])?.count == 10)
        // The same window as `detect offline` prints it over the same database: one convention.
        let publicKey = directory.file("authority.pem")
        #expect(FileManager.default.createFile(atPath: publicKey, contents: Data(signer.publicKey.pem.utf8)))
        let offline = try service.enctl("detect", "offline", "--db", service.state + "/enagent.db", "--keys", file, "--public-key", publicKey, "--json")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(offline.standardOutput.utf8)) as? [String: Any], "\(offline.standardError)")
        var offlineWindow = try #require((report["exposureWindows"] as? [[String: Any]])?.first)
        #expect(offlineWindow.removeValue(forKey: "key") != nil, "detect offline names the matched key")
        let daemonWindow = try #require(rows.first)
        #expect(NSDictionary(dictionary: offlineWindow) == NSDictionary(dictionary: daemonWindow), "\(offlineWindow) vs \(daemonWindow)")
        #expect(rows.first?["reportType"] as? String == "confirmedTest" && rows.first?["infectiousness"] as? String == "standard")
        let day = Date(timeIntervalSince1970: TimeInterval(start.unixSeconds)).formatted(.iso8601.year().month().day())
        #expect(rows.first?["date"] as? String == day)
        let summaries = try service.enctl("summary", "--json")
        #expect(summaries.standardOutput.contains("scoreSum"))
        #expect(try service.status()["lastDetection"] as? Int ?? 0 >= Int(now))
        #expect(try service.status()["reminders"] as? [String] == ["recent-exposure"])
        #expect(try service.status()["latestExposureDay"] as? Int == Int(start.rollingPeriodStart.unixSeconds))

        let unsigned = directory.file("unsigned.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1).zip(keys: [met.key]).write(to: URL(fileURLWithPath: unsigned))
        let refused = try service.enctl("detect", unsigned)
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("the signature is unsigned") && refused.standardError.contains("[KeyFileRejected]"))
        #expect(try service.status()["lastDetectionError"] as? String != "")
        let garbage = directory.file("garbage.zip")
        try Data("not a zip".utf8).write(to: URL(fileURLWithPath: garbage))
        #expect(try service.enctl("detect", garbage).standardError.contains("[KeyFileRejected]"))
        #expect(try service.enctl("detect", file, "--config", garbage).standardError.contains("[ConfigurationInvalid]"))
    }

    /// enctl's session over 20 files (two batches): a key published in the first and the last file
    /// counts once; --max-keys refuses a batch past it.
    @Test func enctlDetectsInOneSessionOverSeveralBatches() throws {
        let signer = try P256PrivateKey()
        let service = try Service.enabled(in: directory, trusting: signer)
        let start = ENIntervalNumber(ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue - 2 * 144)
        let met = try Broadcaster(start: start.rawValue)
        try AgentStore(path: service.state + "/enagent.db").record(try (0..<5).map { try met.sighting(at: met.start + 3_600 + Int64($0) * 60) })
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        let files = try (1...20).map { number in
            let file = directory.file("export-\(number).zip")
            let keys = number == 1 || number == 20 ? [met.key] : [try Broadcaster(start: start.rawValue).key]
            try writer.zip(keys: keys).write(to: URL(fileURLWithPath: file))
            return file
        }
        let result = try Command.enctl(["detect"] + files + ["--json"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        #expect(result.status == 0, "\(result.standardError)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Int])
        #expect(summary == ["KeyFilesProcessed": 20, "KeyFilesSkipped": 0, "KeysChecked": 20, "MatchedKeys": 1, "NewExposureWindows": 1])

        let two = directory.file("two-keys.zip")
        try writer.zip(keys: [try Broadcaster().key, try Broadcaster().key]).write(to: URL(fileURLWithPath: two))
        let limited = try service.enctl("detect", "--max-keys", "1", two)
        #expect(limited.status == 1 && limited.standardError.contains("past its maximum of 1 keys") && limited.standardError.contains("[LimitExceeded]"),
                "\(limited.standardError)")
        #expect(try service.status()["lastDetectionError"] as? String ?? "" != "")
    }

    /// keys export exports what it says, the keys of the last 14 days, whatever retention-days
    /// keeps; reset lists what it erases, test results and a waiting upload among it, and asks
    /// again before an upload that was never sent goes.
    @Test func keysExportAndResetDoWhatTheySay() throws {
        let service = try Service(in: directory, configuration: "retention-days = 30\n")
        #expect(try service.enctl("enable").status == 0)
        let yesterday = try service.insertRolledKey()
        _ = try service.insertRolledKey(daysAgo: 20)
        let export = try service.enctl("keys", "export", "--yes")
        let upload = try #require(try JSONSerialization.jsonObject(with: Data(export.standardOutput.utf8)) as? [String: Any], "\(export.standardError)")
        #expect((upload["temporaryExposureKeys"] as? [[String: Any]])?.compactMap { $0["keyData"] as? String }
                == [Data(yesterday.keyData.bytes).base64EncodedString()], "the last 14 days, not the 30 kept")

        let store = try AgentStore(path: service.state + "/enagent.db")
        let now = Int64(Date().timeIntervalSince1970)
        try store.recordTestResult(TestResult(id: "positive", testDate: nil, verificationMethod: "verification-code", verificationDetail: nil, recordedAt: now))
        try store.queueUpload(testResultId: "positive", url: "http://keys.example/", body: "{}", at: now)
        let answering = { (answers: String) throws -> Command.Result in
            try Command.run("/bin/sh", ["-c", "printf '\(answers)' | exec \"$0\" reset", Command.executable("enctl").path],
                            environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        }
        let kept = try answering("y\\nn\\n")
        #expect(kept.status == 1 && kept.standardError.contains("1 test result(s), 1 key upload(s) still waiting to be sent")
                && kept.standardError.contains("will never be sent. Erase them too?"), "\(kept.standardError)")
        #expect(try store.pendingUploads().count == 1 && store.testResults().count == 1, "nothing erased")
        let erased = try answering("y\\ny\\n")
        #expect(erased.status == 0 && erased.standardOutput.contains("Erased:"), "\(erased.standardError)")
        #expect(try store.pendingUploads().isEmpty && store.testResults().isEmpty)
    }

    @Test func bothProgramsTellTheirVersion() throws {
        for program in ["enctl", "enagentd"] {
            let result = try Command.run(Command.executable(program).path, ["--version"])
            #expect(result.status == 0 && result.standardOutput == ExposureNotificationAPI.packageVersion + "\n", "\(program): \(result.standardError)")
        }
    }

    /// README's order: enagentd runs (the package started it) before the authority's key is in
    /// trusted-keys/; the key put there counts at the next detection, without a restart, and a
    /// file that is no key fails the detection naming it.
    @Test func aTrustedKeyPutInPlaceAfterTheStartCountsAtTheNextDetection() throws {
        let keys = directory.file("trusted-keys")
        let service = try Service(in: directory, configuration: "trusted-keys-directory = \(keys)\n")
        #expect(try service.enctl("enable").status == 0)
        let signer = try P256PrivateKey()
        let file = directory.file("export.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "310", keyVersion: "v1")))
            .zip(keys: [try Broadcaster().key]).write(to: URL(fileURLWithPath: file))
        let untrusted = try service.enctl("detect", file)
        #expect(untrusted.status == 1 && untrusted.standardError.contains("trusted-keys-directory"), "\(untrusted.standardError)")

        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try "not a key\n".write(toFile: keys + "/310_v2.pem", atomically: true, encoding: .utf8)
        let bad = try service.enctl("detect", file)
        #expect(bad.status == 1 && bad.standardError.contains(keys + "/310_v2.pem"), "\(bad.standardError)")
        try FileManager.default.removeItem(atPath: keys + "/310_v2.pem")
        try signer.publicKey.pem.write(toFile: keys + "/310_v1.pem", atomically: true, encoding: .utf8)
        let trusted = try service.enctl("detect", file)
        #expect(trusted.status == 0 && trusted.standardOutput.contains("Key files processed"), "\(trusted.standardError)")
    }

    /// A session over a raw connection: its progress goes to its owner only, another caller is
    /// refused while it is open, and it ends when its owner leaves the bus.
    @Test func aSessionSignalsItsOwnerAndEndsWhenTheOwnerLeaves() throws {
        let signer = try P256PrivateKey()
        let service = try Service.enabled(in: directory, trusting: signer)
        let file = directory.file("export.zip")
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        try writer.zip(keys: try (0..<3).map { _ in try Broadcaster().key }).write(to: URL(fileURLWithPath: file))
        let api = (destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1", interface: "org.enagent.ExposureNotification1")
        final class Received: Sendable {
            let signals = Mutex([[DBusValue]]())
        }
        final class Listener: Sendable {
            let connection: DBusConnection
            let received = Received()
            let subscription: SignalSubscription?

            init(_ connection: DBusConnection, rule: MatchRule) throws {
                self.connection = connection
                let received = self.received
                subscription = try connection.subscribe(rule) { message in received.signals.withLock { $0.append(message.arguments) } }
            }
        }
        func connect() throws -> Listener {
            try Listener(try DBusConnection(address: service.bus.address), rule: MatchRule(path: api.path, interface: api.interface, member: "DetectionProgress"))
        }
        func call(_ connection: DBusConnection, _ method: String, _ arguments: [DBusValue]) throws(DBusError) -> [DBusValue] {
            try connection.call(destination: api.destination, path: api.path, interface: api.interface, member: method, arguments)
        }
        let owner = try connect(), other = try connect()
        let session = try #require(try call(owner.connection, "StartDetection", [.string(""), .uint64(0)]).first?.string)
        let descriptor = open(file, O_RDONLY)
        defer { close(descriptor) }
        let reply = try call(owner.connection, "AddKeyFiles", [.string(session), .array(elementSignature: "h", [.unixFD(descriptor)])])
        #expect(reply.first?.stringKeyed?["KeysChecked"]?.unwrapped == .uint64(3))
        let deadline = ContinuousClock.now + .seconds(5)
        while owner.received.signals.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(owner.received.signals.withLock { $0.first?.first } == .string(session), "the owner hears its session's progress")
        #expect(other.received.signals.withLock { $0.isEmpty }, "no one else does")
        #expect(throws: DBusError.self) { try call(other.connection, "AddKeyFiles", [.string(session), .array(elementSignature: "h", [.unixFD(descriptor)])]) }
        do { _ = try call(other.connection, "StartDetection", [.string(""), .uint64(0)]) } catch {
            #expect(error.name == "org.enagent.ExposureNotification1.Error.Busy")
        }
        owner.subscription?.cancel()
        owner.connection.close()
        var started: String?
        while started == nil && ContinuousClock.now < deadline + .seconds(5) {
            started = try? call(other.connection, "StartDetection", [.string(""), .uint64(0)]).first?.string
            if started == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(started != nil, "the session ended when its owner left")
        #expect(try service.status()["lastDetection"] as? Int == 0, "nothing of it was recorded")
        service.daemon.terminate()
        service.daemon.waitForExit()
        #expect(service.daemon.standardError().contains("ended unfinished: its owner"))
    }

    @Test func servesExactlyTheDocumentedInterface() throws {
        let service = try Service(in: directory)
        let connection = try DBusConnection(address: service.bus.address)
        let served = try connection.call(destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                                         interface: "org.freedesktop.DBus.Introspectable", member: "Introspect").first?.string
        let documented = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("dbus/org.enagent.ExposureNotification1.xml")
        let text = try String(contentsOf: documented, encoding: .utf8)
        #expect(served?.trimmingCharacters(in: .whitespacesAndNewlines) == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "after changing the API, run make interface-xml and document the change")
        #expect(throws: DBusError.self, "wrong argument types") { try service.call("Pause", [.string("soon")]) }
        do { _ = try service.call("Pause", [.uint64(0)]) } catch {
            #expect(error.name == "org.enagent.ExposureNotification1.Error.InvalidArguments")
        }
    }

    @Test func withTheShippedPolicyOthersMayReadButNotChange() throws {
        let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        // The system bus's own default policy (as in Debian's system.conf), then ours.
        let policy = """
            <include>\(project.appendingPathComponent("lab/system-bus-default.conf").path)</include>
            <include>\(project.appendingPathComponent("dbus/org.enagent.ExposureNotification1.conf").path)</include>
            """
        let service = try Service(in: directory, policy: policy)
        let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", Command.executable("enctl").path]
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address]
        let read = try Command.run("/usr/bin/setpriv", nobody + ["status", "--json"], environment: environment)
        #expect(read.status == 0, "anyone may read the status: \(read.standardError)")
        #expect(read.standardOutput.contains("consent-required"))
        let change = try Command.run("/usr/bin/setpriv", nobody + ["enable"], environment: environment)
        #expect(change.status == 1)
        #expect(change.standardError.contains("not allowed"), "\(change.standardError)")
        let keys = try Command.run("/usr/bin/setpriv", nobody + ["keys", "export", "--yes"], environment: environment)
        #expect(keys.status == 1 && keys.standardError.contains("not allowed"))
        #expect(try service.enctl("enable").status == 0, "root may")
    }

    @Test func theDaemonItselfRefusesUnprivilegedCallers() throws {
        let service = try Service(in: directory)  // a bus that lets anyone call: only the daemon's check stands
        let result = try Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Command.executable("enctl").path, "enable"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        #expect(result.status == 1)
        #expect(result.standardError.contains("only root and members of the group enagent"), "\(result.standardError)")
        #expect(try service.status()["enabled"] as? Bool == false)
    }

    /// Two callers of different rights racing: every call of root's passes the check and every
    /// one of nobody's is refused, whichever of the daemon's threads judges it.
    @Test func callersRacingAreEachJudgedByTheirOwnRights() throws {
        let service = try Service(in: directory)  // a bus that lets anyone call: only the daemon's check stands
        let address = service.bus.address, nobodyCalls = 400
        // One dbus-send per call, as nobody, all in one shell.
        let loop = "i=0; while [ $i -lt \(nobodyCalls) ]; do dbus-send --system --print-reply --dest=org.enagent.ExposureNotification1 "
            + "/org/enagent/ExposureNotification1 org.enagent.ExposureNotification1.GetTestResults 2>&1; i=$((i + 1)); done"
        let nobody = Mutex<Result<Command.Result, any Error>?>(nil), nobodyDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let result = Result { try Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", loop],
                                                  environment: ["DBUS_SYSTEM_BUS_ADDRESS": address]) }
            nobody.withLock { $0 = result }
            nobodyDone.signal()
        }
        // Root's calls alternate between a privileged method (judged on the control queue) and
        // DetectExposures without files (judged on the detection queue, then refused for its
        // arguments), from connections enough to stay within the daemon's budget of calls per caller
        // (100 a second each after 200: an idle machine answered more than 8 connections may make).
        let root = try (0..<32).map { _ in try DBusConnection(address: address) }
        var rootCalls = 0, rootMisjudged = [String]()
        while nobodyDone.wait(timeout: .now()) == .timedOut {
            let detect = rootCalls % 2 == 1
            do {
                try root[rootCalls % root.count].call(destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                                                       interface: "org.enagent.ExposureNotification1", member: detect ? "DetectExposures" : "GetTestResults",
                                                       detect ? [.array(elementSignature: "h", []), .string("")] : [])
                if detect { rootMisjudged.append("DetectExposures without files answered") }
            } catch where detect && error.name == "org.enagent.ExposureNotification1.Error.InvalidArguments" {
                // Past the check, refused for having no key file.
            } catch {
                rootMisjudged.append("\(error)")
            }
            rootCalls += 1
        }
        let replies = try #require(nobody.withLock { $0 }).get().standardOutput
        let refused = replies.components(separatedBy: "Error org.enagent.ExposureNotification1.Error.NotAuthorized").count - 1
        #expect(refused == nobodyCalls, "every call of nobody's is refused: \(replies.prefix(300))")
        #expect(rootCalls > nobodyCalls && rootMisjudged.isEmpty, "\(rootCalls) calls of root's, misjudged: \(rootMisjudged.prefix(3))")
    }

    @Test func enctlSaysWhenTheDaemonIsNotRunning() throws {
        let bus = try PrivateBus()
        let result = try Command.enctl(["status"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(result.status == 1)
        #expect(result.standardError.contains("enagentd is not running"))
    }
}
