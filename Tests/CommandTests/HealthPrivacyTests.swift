import ENAPI
import ENBus
import ENCore
import ENKeyFileWriter
import ENKeyFiles
@testable import ENStore
import Foundation
import Synchronization
import TestSupport
import Testing

/// What tells exposure or diagnosis is for root and the group enagent only: another user, on a
/// bus with the shipped policy, tries every way in and learns nothing of it.
@Suite struct HealthPrivacyTests {
    let directory = TemporaryDirectory()
    static let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"]
    static let destination = ["--dest=org.enagent.ExposureNotification1", "/org/enagent/ExposureNotification1"]

    /// The shipped policy on the system bus's default one, as ServiceTests' policy test has it.
    static var shippedPolicy: String {
        let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return """
            <include>\(project.appendingPathComponent("lab/system-bus-default.conf").path)</include>
            <include>\(project.appendingPathComponent("dbus/org.enagent.ExposureNotification1.conf").path)</include>
            """
    }

    /// dbus-send as nobody: its output and errors, together.
    func send(_ service: ServiceTests.Service, _ arguments: [String]) throws -> Command.Result {
        try Command.run("/usr/bin/setpriv", Self.nobody + ["/usr/bin/dbus-send", "--system", "--print-reply"] + Self.destination + arguments,
                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
    }

    @Test func anotherUserLearnsNothingOfExposureOrDiagnosis() throws {
        let signer = try P256PrivateKey()
        let keys = directory.file("trusted-keys")
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true)
        try signer.publicKey.pem.write(toFile: keys + "/authority.pem", atomically: true, encoding: .utf8)
        let service = try ServiceTests.Service(in: directory, policy: Self.shippedPolicy, configuration: "trusted-keys-directory = \(keys)\n")
        #expect(try service.enctl("enable").status == 0)

        // A diagnosis whose upload the key server refused, and an exposure two days ago.
        let store = try AgentStore(path: service.state + "/enagent.db")
        let now = Int64(Date().timeIntervalSince1970)
        try store.recordTestResult(TestResult(id: "positive", testDate: nil, verificationMethod: "verification-code", verificationDetail: nil, recordedAt: now))
        try store.queueUpload(testResultId: "positive", url: "http://keys.example/", body: "{}", at: now)
        try store.finishUpload(testResultId: "positive", .refused(reason: "HTTP 400"), at: now)
        let start = ENIntervalNumber(ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue - 2 * 144)
        let met = try Broadcaster(start: start.rawValue)
        try store.record(try (0..<10).map { try met.sighting(at: met.start + 7_200 + Int64($0) * 60, rssi: -60) })
        let file = directory.file("export.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
            .zip(keys: [met.key]).write(to: URL(fileURLWithPath: file))
        let exposureDay = String(start.rollingPeriodStart.unixSeconds)

        // Nobody listens to every signal from the start; root watches for exposures, to show that one is sent.
        chmod(directory.path, 0o755)
        let heardFile = directory.file("heard")
        #expect(FileManager.default.createFile(atPath: heardFile, contents: Data(), attributes: [.posixPermissions: 0o666]))
        let heard = { (try? String(contentsOfFile: heardFile, encoding: .utf8)) ?? "" }
        let monitor = try ChildProcess("/usr/bin/setpriv", Self.nobody + ["/bin/sh", "-c", "exec dbus-monitor --system > \(heardFile) 2>&1"],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        defer { monitor.terminate(); monitor.waitForExit() }
        let root = try DBusConnection(address: service.bus.address)
        let signalled = DispatchSemaphore(value: 0)
        let watch = try root.subscribe(MatchRule(sender: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                                                 interface: "org.enagent.ExposureNotification1", member: "ExposureDetected")) { _ in signalled.signal() }
        defer { watch.cancel() }
        _ = try root.call(destination: "org.enagent.ExposureNotification1", path: "/org/enagent/ExposureNotification1",
                          interface: "org.enagent.ExposureNotification1", member: "WatchExposures")
        let deadline = Date().addingTimeInterval(10)
        while !heard().contains("NameAcquired"), Date() < deadline { usleep(20_000) }
        let othersWatch = try send(service, ["org.enagent.ExposureNotification1.WatchExposures"])
        #expect(othersWatch.status != 0, "another user may not watch for exposures: \(othersWatch.standardOutput)")

        #expect(try service.enctl("detect", file).status == 0)
        #expect(signalled.wait(timeout: .now() + 10) == .success, "root, watching, hears of the exposure")
        let rootStatus = try service.status()
        #expect(rootStatus["latestExposureDay"] as? Int == Int(exposureDay))
        #expect(Set(rootStatus["reminders"] as? [String] ?? []) == ["recent-exposure", "upload-refused"], "root sees it all: \(rootStatus)")

        // Every property by name (those introspection lists, and the health ones that were properties once), GetAll, introspection.
        let introspection = try send(service, ["org.freedesktop.DBus.Introspectable.Introspect"])
        #expect(introspection.status == 0, "anyone may introspect: \(introspection.standardError)")
        let listed = introspection.standardOutput.split(separator: "<property name=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        #expect(listed.count >= 10, "\(introspection.standardOutput)")
        var seen = [introspection.standardOutput]
        for name in Set(listed + ["LatestExposureDay", "Reminders", "HealthStatus"]) {
            let get = try send(service, ["org.freedesktop.DBus.Properties.Get", "string:org.enagent.ExposureNotification1", "string:\(name)"])
            seen.append(get.standardOutput + get.standardError)
        }
        let all = try send(service, ["org.freedesktop.DBus.Properties.GetAll", "string:org.enagent.ExposureNotification1"])
        #expect(all.status == 0 && all.standardOutput.contains("Reminders"), "anyone may read the properties: \(all.standardError)")
        seen.append(all.standardOutput)
        let health = try send(service, ["org.enagent.ExposureNotification1.GetHealthStatus"])
        #expect(health.status != 0, "another user may not ask for the health status: \(health.standardOutput)")
        seen.append(health.standardOutput)
        let status = try Command.run("/usr/bin/setpriv", Self.nobody + [Command.executable("enctl").path, "status"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        #expect(status.status == 0 && status.standardOutput.contains("Status") && status.standardOutput.contains("Enabled"), "\(status.standardError)")
        #expect(status.standardOutput.contains("members of the group enagent only"), "enctl status says what more the group sees: \(status.standardOutput)")
        seen.append(status.standardOutput)
        let json = try Command.run("/usr/bin/setpriv", Self.nobody + [Command.executable("enctl").path, "status", "--json"],
                                   environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
        #expect(json.status == 0 && json.standardOutput.contains("\"healthShown\" : false"), "\(json.standardOutput)")
        seen.append(json.standardOutput)

        usleep(500_000)  // what the bus still has for the monitor
        monitor.terminate()
        monitor.waitForExit()
        #expect(heard().contains("PropertiesChanged"), "the monitor heard the broadcasts: \(heard().prefix(2_000))")
        seen.append(heard())
        for text in seen {
            for secret in ["recent-exposure", "upload-refused", exposureDay, "member=ExposureDetected", "LatestExposureDay\""] {
                #expect(!text.contains(secret), "another user learnt \(secret): \(text.prefix(3_000))")
            }
        }
    }

    /// The sightings per hour, counted by the daemon, go to root (and the group) over the shipped
    /// policy; another user is refused by the bus, and by the daemon itself on a bus that lets
    /// anyone call.
    @Test func sightingsPerHourAreForTheGroupOnly() throws {
        let service = try ServiceTests.Service(in: directory, policy: Self.shippedPolicy)
        let hour = (Int64(Date().timeIntervalSince1970) / 3_600 - 2) * 3_600
        let met = try Broadcaster(), other = try Broadcaster()
        try AgentStore(path: service.state + "/enagent.db").record(try [met.sighting(at: hour + 60, rssi: -60), met.sighting(at: hour + 120, rssi: -61),
                                                                        other.sighting(at: hour + 3_660, rssi: -70)])
        let contract = ExposureNotificationAPI.Methods.getSightingsPerHour
        let counts = try contract.output(try service.call(contract.name, SightingsPerHourRequest(since: 0).values))
        #expect(counts.hours == [SightingHourRecord(hourStart: UInt64(hour), sightings: 2, distinctIdentifiers: 1),
                                 SightingHourRecord(hourStart: UInt64(hour + 3_600), sightings: 1, distinctIdentifiers: 1)])

        let refused = try send(service, ["org.enagent.ExposureNotification1.\(contract.name)", "uint64:0"])
        #expect(refused.status != 0 && refused.standardError.contains("AccessDenied"), "the bus refuses another user: \(refused.standardError)")
        #expect(!refused.standardOutput.contains("uint64"), "\(refused.standardOutput)")

        let open = try ServiceTests.Service(in: TemporaryDirectory())
        let refusedByDaemon = try send(open, ["org.enagent.ExposureNotification1.\(contract.name)", "uint64:0"])
        #expect(refusedByDaemon.status != 0 && refusedByDaemon.standardError.contains("NotAuthorized"), "\(refusedByDaemon.standardError)")
    }

    /// enctl as the timer's unit runs it: its stderr (and stdout) is the journal, named by
    /// JOURNAL_STREAM, as systemd sets it.
    static func underJournal(_ service: ServiceTests.Service, _ arguments: String...) throws -> Command.Result {
        try Command.run("/bin/sh", ["-c", Command.journalStream + "exec \"$0\" \"$@\"",
                                    Command.executable("enctl").path] + arguments,
                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address])
    }

    /// The detection timer's unit writes enctl's output to its journal, which groups adm and
    /// systemd-journal read: a matching detection and an upload that fails leave nothing there of
    /// either, while a person at a terminal sees both.
    @Test func theTimersJournalLearnsNothingOfExposureOrDiagnosis() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer)
        let start = ENIntervalNumber(ENIntervalNumber(unixSeconds: Int64(Date().timeIntervalSince1970))!.rollingPeriodStart.rawValue - 2 * 144)
        let met = try Broadcaster(start: start.rawValue)
        try AgentStore(path: service.state + "/enagent.db").record(try (0..<10).map { try met.sighting(at: met.start + 7_200 + Int64($0) * 60, rssi: -60) })
        let writer = KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "228", keyVersion: "v1")))
        let files = try (1...2).map { number in
            let file = directory.file("export-\(number).zip")
            try writer.zip(keys: [number == 1 ? met.key : try Broadcaster().key]).write(to: URL(fileURLWithPath: file))
            return file
        }
        let journal = try Self.underJournal(service, "detect", files[0])
        #expect(journal.status == 0 && journal.standardOutput.contains("Keys checked"), "\(journal.standardError)")
        let atTerminal = try service.enctl("detect", files[1])
        #expect(atTerminal.standardOutput.contains("Keys matched"), "a person sees the outcome: \(atTerminal.standardOutput)")

        _ = try service.insertRolledKey()
        let authority = try DiagnosisTests.HealthAuthority(log: directory.file("publishes.jsonl"), "--rate-limit", "3600")
        let configuration = try authority.configuration(in: directory)
        #expect(try service.enctl("test-result", "add", "--code", "12345678", "--server-config", configuration).status == 0)
        let limited = try service.enctl("share", "--yes", "--server-config", configuration)
        #expect(limited.status == 1 && limited.standardError.contains("HTTP 429"), "\(limited.standardError)")
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.write { try $0.execute("UPDATE pending_upload SET next_attempt_at = 0") }
        let pending = try Self.underJournal(service, "share", "--pending", "--server-config", configuration)
        #expect(pending.status == 0, "the unit's exit status tells nothing either: \(pending.standardError)")
        let requests = try authority.requests()
        #expect(requests.filter { $0.path == "/api/certificate" }.count == 2, "the upload was tried: \(requests)")
        let told = try service.enctl("share", "--pending", "--server-config", configuration)
        #expect(told.status == 1 || told.standardOutput.contains("No pending uploads due"), "a person is told: \(told.standardError)")

        for text in [journal.standardOutput + journal.standardError, pending.standardOutput + pending.standardError] {
            for fact in ["matched", "exposure", "upload", "429", "test result", "shared"] {
                #expect(!text.lowercased().contains(fact), "the journal learnt \(fact): \(text)")
            }
        }
    }
}
