import ArgumentParser
import ENAPI
import Dispatch
import ENBus
import ENSystemd
import FoundationEssentials

/// `enctl watch`: desktop notifications of exposures, for a person's session.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Notify the desktop when enagentd finds an exposure of increased risk (runs until stopped).",
        discussion: """
            Asks enagentd for its ExposureDetected signal on the system bus (WatchExposures: \
            root and members of the group enagent only, since the signal tells of an exposure) \
            and shows each as \
            a desktop notification through org.freedesktop.Notifications on the session bus \
            ($DBUS_SESSION_BUS_ADDRESS). enagentd sends it only when a detection's verdict, by \
            the health authority's rules, is increased risk where it was not, or on a later day: \
            encounters below the authority's alert threshold raise nothing (see 'enctl risk'). Without a desktop session it only prints a line per \
            exposure: notifications are best effort, and enagentd never depends on them. Run \
            it in a desktop session, e.g. as the user unit enagent-notify.service. When its \
            output is the journal (JOURNAL_STREAM, as under that unit), which groups adm and \
            systemd-journal read, it writes nothing of an exposure there.
            """)

    func run() throws {
        // An exposure is for the person and the desktop, never for the journal's readers.
        let report = !JournalLog.outputReachesJournal
        let client = try DaemonClient()
        let notifier = DesktopNotifier()
        let subscription: SignalSubscription
        do {
            let signal = DaemonClient.API.Signals.exposureDetected
            subscription = try client.connection.subscribe(MatchRule(sender: DaemonClient.API.busName, path: DaemonClient.API.path,
                                                                      interface: DaemonClient.API.interface, member: signal.name)) { message in
                let day: UInt64
                do { day = try signal.arguments(message.arguments).latestExposureDay } catch {
                    return StandardStream.error.write("enctl: an ExposureDetected signal this enctl does not understand: \(error)\n")
                }
                if report { StandardStream.output.write("Increased risk: you were exposed on \(utcDay(Int64(clamping: day))). See 'enctl risk'.\n") }
                do throws(DBusError) {
                    try notifier.notify(summary: "Increased risk of exposure to COVID-19",
                                        body: "You were near someone who has reported a positive test, on \(utcDay(Int64(clamping: day))). "
                                            + "Run 'enctl risk' and follow your health authority's advice.")
                } catch {
                    if report { StandardStream.error.write("enctl: no desktop notification (\(error.message))\n") }
                }
            }
        } catch {
            throw DaemonClient.explain(error)
        }
        // After the match rule is in place: a signal sent between the two would be lost.
        try client.call(DaemonClient.API.Methods.watchExposures)
        StandardStream.error.write("enctl: watching for exposures\(notifier.available ? "" : " (no desktop session: printing only)")\n")
        withExtendedLifetime((client, subscription)) { dispatchMain() }
    }
}

/// org.freedesktop.Notifications on the session bus, when there is one.
final class DesktopNotifier: Sendable {
    private let session: DBusConnection?

    init() {
        let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
            ?? ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { "unix:path=\($0)/bus" }
        guard let address else {
            session = nil
            return
        }
        do { session = try DBusConnection(address: address) } catch {
            StandardStream.error.write("enctl: no desktop notifications: cannot reach the session bus: \(error)\n")
            session = nil
        }
    }

    var available: Bool { session != nil }

    /// Shows a notification when there is a session; its failure is the caller's to report.
    func notify(summary: String, body: String) throws(DBusError) {
        guard let session else { return }
        try session.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                         interface: "org.freedesktop.Notifications", member: "Notify",
                         [.string("enagent"), .uint32(0), .string("dialog-warning"), .string(summary), .string(body), .strings([]),
                          .properties(["urgency": .byte(2)]), .int32(-1)], timeout: .seconds(5))
    }
}
