import ENBus
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import Synchronization
import TestSupport
import Testing

/// `enctl watch` turns ExposureDetected into a desktop notification. The notification server is
/// a stand-in exported by the test on a private session bus: a desktop cannot run here.
@Suite struct WatchTests {
    let directory = TemporaryDirectory()

    @Test func anExposureBecomesADesktopNotification() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer)

        let session = try PrivateBus()
        let notifications = Mutex<[[DBusValue]]>([])
        let received = DispatchSemaphore(value: 0)
        let server = try DBusConnection(address: session.address)
        try server.export(ExportedObject(path: "/org/freedesktop/Notifications", interfaces: [DBusInterface("org.freedesktop.Notifications", methods: [
            DBusMethod("Notify", in: [DBusArgument("app_name", "s"), DBusArgument("replaces_id", "u"), DBusArgument("app_icon", "s"),
                                      DBusArgument("summary", "s"), DBusArgument("body", "s"), DBusArgument("actions", "as"),
                                      DBusArgument("hints", "a{sv}"), DBusArgument("expire_timeout", "i")],
                       out: [DBusArgument("id", "u")]) { call in
                notifications.withLock { $0.append(call.arguments) }
                received.signal()
                return [.uint32(1)]
            },
        ])]))
        try server.requestName("org.freedesktop.Notifications")

        let names = { try DBusConnection(address: service.bus.address).callBus("ListNames").first?.elements?.count ?? 0 }
        let before = try names()
        let watch = try ChildProcess(Command.executable("enctl").path, ["watch"],
                                     environment: ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address, "DBUS_SESSION_BUS_ADDRESS": session.address],
                                     captureStandardError: true)
        let deadline = Date().addingTimeInterval(10)
        while try names() <= before, Date() < deadline { usleep(20_000) }  // each probe sees itself: one more name is watch
        usleep(300_000)  // and its match rule

        let now = Int64(Date().timeIntervalSince1970)
        let met = try Broadcaster(start: ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue - 144)
        let store = try AgentStore(path: service.state + "/enagent.db")
        try store.record(try (0..<5).map { try met.sighting(at: met.start + 3_600 + Int64($0) * 60, rssi: -60) })
        let file = directory.file("export.zip")
        try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "1", keyVersion: "v1")))
            .zip(keys: [met.key]).write(to: URL(fileURLWithPath: file))
        #expect(try service.enctl("detect", file).status == 0)

        #expect(received.wait(timeout: .now() + 10) == .success, "a notification arrived")
        let notification = try #require(notifications.withLock { $0.first })
        #expect(notification[0].string == "enagent")
        #expect(notification[3].string?.contains("exposure") == true)
        watch.terminate()
        watch.waitForExit()
        #expect(watch.standardError().contains("watching for exposures"))
    }

    /// Under enagent-notify.service enctl watch's output is the user's journal, which groups adm
    /// and systemd-journal read: an exposure leaves nothing there. A second watch, at a terminal's
    /// place, shows that the signal came: for twenty close minutes, and not for a positive key's
    /// single far sighting before them, which the health authority's rules (the standard ones,
    /// LFPH's Wide Net) count for nothing.
    @Test func anExposureLeavesNothingInTheJournal() throws {
        let signer = try P256PrivateKey()
        let service = try ServiceTests.Service.enabled(in: directory, trusting: signer)
        let journal = directory.file("journal"), terminal = directory.file("terminal")
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": service.bus.address, "XDG_RUNTIME_DIR": directory.file("no-session")]
        let watches = try [(journal, Command.journalStream), (terminal, "")].map { file, journalStream in
            try ChildProcess("/bin/sh", ["-c", "exec > \(file) 2>&1; \(journalStream)exec \"$0\" watch", Command.executable("enctl").path],
                             environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }.filter { $0.key != "DBUS_SESSION_BUS_ADDRESS" })
        }
        defer { watches.forEach { $0.terminate(); $0.waitForExit() } }
        let text = { (file: String) in (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        var deadline = Date().addingTimeInterval(10)
        while !(text(journal).contains("watching") && text(terminal).contains("watching")), Date() < deadline { usleep(20_000) }

        let now = Int64(Date().timeIntervalSince1970)
        let yesterday = ENIntervalNumber(unixSeconds: now)!.rollingPeriodStart.rawValue - 144
        let far = try Broadcaster(start: yesterday), met = try Broadcaster(start: yesterday)
        let store = try AgentStore(path: service.state + "/enagent.db")
        // Another room: 90 dB attenuation, one scan.
        try store.record([try far.sighting(at: far.start + 1_800, rssi: -100)])
        try store.record(try (0..<20).map { try met.sighting(at: met.start + 3_600 + Int64($0) * 60, rssi: -50) })
        func detect(_ key: DiagnosisKey, _ name: String) throws {
            let file = directory.file(name)
            try KeyExportWriter(region: "CH", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "1", keyVersion: "v1")))
                .zip(keys: [key]).write(to: URL(fileURLWithPath: file))
            #expect(try service.enctl("detect", file).status == 0)
        }
        try detect(far.key, "far.zip")
        let farStatus = try service.enctl("status")
        #expect(farStatus.standardOutput.contains("Exposure risk         none") && !farStatus.standardOutput.contains("exposed"), "\(farStatus.standardOutput)")
        try detect(met.key, "met.zip")
        deadline = Date().addingTimeInterval(10)
        while !text(terminal).contains("Increased risk"), Date() < deadline { usleep(20_000) }
        usleep(300_000)
        let day = Date(timeIntervalSince1970: TimeInterval(yesterday) * 600).formatted(.iso8601.year().month().day())
        #expect(text(terminal).components(separatedBy: "Increased risk").count == 2, "one signal, for the close minutes only: \(text(terminal))")
        #expect(text(terminal).contains("Increased risk: you were exposed on \(day)"), "\(text(terminal))")
        #expect(text(journal).contains("watching for exposures") && !text(journal).lowercased().contains("risk")
                && !text(journal).contains("exposed"), "the journal: \(text(journal))")
        let status = try service.enctl("status")
        #expect(status.standardOutput.contains("Exposure risk         increased (\(day), UTC day)")
                && status.standardOutput.contains("You were exposed on \(day)"), "\(status.standardOutput)")
    }
}
