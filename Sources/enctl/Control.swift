import ArgumentParser
import ENAPI
import ENCore
import FoundationEssentials

/// `enctl status`: what the agent is doing.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what enagentd is doing.", discussion: """
        Reads enagentd's properties over D-Bus; anyone may. The status is one of \
        \(AgentStatus.allCases.map(\.rawValue).joined(separator: ", ")). A sighting stored is an \
        identifier heard by one adapter in one scan, however often the controller reported it \
        (those stored before enagent kept them so count each report). Under RSSI correction come \
        the adapter in use and every adapter enagent.conf names, each with the correction its \
        sightings get. The exposure risk (the latest detection's verdict by the health \
        authority's rules: none, low or increased; 'enctl risk' shows it whole) and the \
        reminders of an exposure or a refused upload are shown to root and members of the group \
        enagent only; for others the status says so. Only increased risk says "You were exposed". \
        Times are UTC. Exit status: 0, or 1 when enagentd is not running.
        """)

    @OptionGroup var output: JSONOutput

    func run() throws {
        let client = try DaemonClient()
        let report = StatusReport(properties: try client.properties(), health: try client.healthStatus())
        if output.json { return try printJSON(report) }
        let properties = report.properties
        var exposureRisk = "only for root and members of the group \(DaemonClient.API.privilegedGroup)"
        if let health = report.health {
            exposureRisk = health.verdict.map { verdict in
                switch verdict.total {
                case .increased: return "increased (\(utcDay(verdict.latestIncreasedRiskDay ?? 0)), UTC day)"
                case .low: return "low (below the alert threshold)"
                case .none: return "none"
                }
            } ?? "none (no detection yet)"
        }
        printColumns([
            ["Status", properties.status],
            ["Enabled", properties.enabled ? "yes" : "no"],
            ["Paused until", properties.pausedUntil > 0 ? utcTime(Int64(properties.pausedUntil)) : "-"],
            ["Adapter", properties.adapter.isEmpty ? "-" : properties.adapter],
            ["Advertising", properties.advertising ? "yes" : "no"],
            ["Scanning", properties.scanning ? "yes" : "no"],
            ["Sightings stored", String(properties.sightingsStored)],
            ["Last detection", properties.lastDetection > 0 ? utcTime(Int64(properties.lastDetection)) : "never"],
            ["Last detection error", properties.lastDetectionError.isEmpty ? "-" : properties.lastDetectionError],
            ["RSSI correction", Self.decibels(properties.rssiCorrection) + " by default"],
        ] + properties.adapterRssiCorrections.map(Self.adapterRow) + [
            ["Exposure risk", exposureRisk],
            ["Version", properties.version],
        ])
        for reminder in report.reminders {
            switch reminder {
            case "detection-overdue": print("\nWarning: no exposure detection has succeeded for more than 24 hours.")
            case "upload-refused": print("\nThe key server refused your keys for good: they were not shared. See 'enctl test-result list'.")
            case "recent-exposure":
                print("\nYou were exposed on \(utcDay(Int64(report.health?.latestExposureDay ?? 0))), with increased risk by your health authority's rules: "
                      + "see 'enctl risk' and follow your health authority's advice.")
            default: print("\nReminder: \(reminder)")
            }
        }
        if let verdict = report.health?.verdict, verdict.total == .low {
            print("\nLow risk: \(verdict.lowRiskEncounters) encounter\(verdict.lowRiskEncounters == 1 ? "" : "s") below your health authority's "
                  + "alert threshold, the latest on \(utcDay(verdict.latestLowRiskDay ?? 0)). No action is needed; see 'enctl risk'.")
        }
        if report.health == nil {
            print("\nWhether you were exposed or shared a positive test is shown to root and members of the group "
                  + "\(DaemonClient.API.privilegedGroup) only; ask an administrator to add you.")
        }
    }

    /// An adapter's correction under "RSSI correction": the adapter in use by name, another by address.
    private static func adapterRow(_ adapter: AdapterRssiCorrection) -> [String] {
        var notes = adapter.name.isEmpty ? ["not in use"] : [adapter.address.isEmpty ? "address not known yet" : adapter.address]
        if !adapter.configured { notes.append("the default") }
        return ["  " + (adapter.name.isEmpty ? adapter.address : adapter.name), decibels(adapter.rssiCorrection) + " (" + notes.joined(separator: ", ") + ")"]
    }

    private static func decibels(_ value: Int32) -> String { value == 0 ? "none" : String(signed: value) + " dB" }
}

/// What `enctl status` shows: the properties, and for root and the group enagent what tells
/// exposure or diagnosis. Its JSON is the properties' with `latestExposureDay` (of increased risk),
/// `risk` and every reminder added, or `healthShown: false` for others.
struct StatusReport: Encodable {
    let properties: AgentProperties
    /// nil when the caller may not see it.
    let health: HealthStatus?

    var reminders: [String] { health?.reminders ?? properties.reminders }

    private enum CodingKeys: String, CodingKey {
        case latestExposureDay, risk, reminders, healthShown
    }

    func encode(to encoder: any Encoder) throws {
        try properties.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(health != nil, forKey: .healthShown)
        try container.encode(reminders, forKey: .reminders)
        if let health {
            try container.encode(health.latestExposureDay, forKey: .latestExposureDay)
            try container.encode(health.risk, forKey: .risk)
        }
    }
}

/// `--json` for the commands that change state: the status after the change.
struct DaemonChange: ParsableArguments {
    @OptionGroup var output: JSONOutput

    /// Calls `method` on enagentd, then prints `message`, or with --json the daemon's status.
    func request<Input>(_ method: MethodContract<Input, NoArguments>, _ input: Input, then message: @autoclosure () -> String) throws {
        let client = try DaemonClient()
        try client.call(method, input)
        if output.json { return try printJSON(StatusReport(properties: try client.properties(), health: try client.healthStatus())) }
        print(message())
    }
}

/// `enctl enable`: consent and start.
struct Enable: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn Exposure Notification on (records your consent).", discussion: """
        The first enable records consent in enagentd's database; from then on the device \
        advertises its rotating identifier and records the identifiers around it.
        """)

    @OptionGroup var change: DaemonChange

    func run() throws {
        try change.request(DaemonClient.API.Methods.setEnabled, SetEnabledArguments(enabled: true), then: "Exposure Notification is on.")
    }
}

/// `enctl disable`: withdraw consent and stop the radio.
struct Disable: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn Exposure Notification off at once (withdraws consent).", discussion: """
        Advertising and scanning stop immediately. Keys and sightings stay until they expire or \
        'enctl reset' erases them.
        """)

    @OptionGroup var change: DaemonChange

    func run() throws {
        try change.request(DaemonClient.API.Methods.setEnabled, SetEnabledArguments(enabled: false), then: "Exposure Notification is off.")
    }
}

/// `enctl pause [DURATION]`.
struct Pause: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Pause advertising and scanning for a while.", discussion: """
        DURATION is a number with a unit: 90s, 30m, 2h or 1d (default: 1h), at most 366d. \
        enagentd resumes by itself when it ends; 'enctl resume' ends it early.
        """)

    @Argument(help: ArgumentHelp("How long, such as 30m or 2h.", valueName: "duration"), transform: PauseDuration.seconds)
    var seconds: UInt64 = 3_600

    @OptionGroup var change: DaemonChange

    func run() throws {
        let client = try DaemonClient()
        try client.call(DaemonClient.API.Methods.pause, PauseArguments(seconds: seconds))
        // The end enagentd applied, not one reckoned here.
        let properties = try client.properties()
        if change.output.json { return try printJSON(StatusReport(properties: properties, health: try client.healthStatus())) }
        print("Paused until \(utcTime(Int64(properties.pausedUntil))).")
    }
}

/// `enctl resume`.
struct Resume: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End a pause now.")

    @OptionGroup var change: DaemonChange

    func run() throws {
        try change.request(DaemonClient.API.Methods.resume, NoArguments(), then: "Resumed.")
    }
}

/// `enctl reset`.
struct Reset: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Erase all keys, sightings, exposure results and test results.", discussion: """
        Erases the device's keys, the sightings, exposure windows and the record of detections \
        and key files processed, test results, and key uploads still waiting to be sent. This \
        cannot be undone. enctl lists what it will erase and asks first, and asks again when an \
        upload is still waiting (erased, it is never sent), unless --yes is given; consent and \
        settings stay as they are.
        """)

    @Flag(help: "Do not ask.")
    var yes = false

    @OptionGroup var change: DaemonChange

    func run() throws {
        let client = try DaemonClient()
        let results = try StoredTestResult.all(client).count
        let waiting = try client.call(DaemonClient.API.Methods.getPendingUploads).uploads.count
        let erased = ["every key of this device", "the sightings", "exposure windows and the record of detections and key files processed"]
            + (results > 0 ? ["\(results) test result(s)"] : []) + (waiting > 0 ? ["\(waiting) key upload(s) still waiting to be sent"] : [])
        StandardStream.error.write("enctl reset erases \(erased.joined(separator: ", ")). Consent and settings stay.\n")
        guard yes || Confirmation.ask("Erase all of it?") else { throw CommandError("nothing erased") }
        guard yes || waiting == 0 || Confirmation.ask("The \(waiting) waiting upload(s) of your keys to the health authority will never be sent. Erase them too?") else {
            throw CommandError("nothing erased")
        }
        try change.request(DaemonClient.API.Methods.resetData, NoArguments(), then: "Erased: \(erased.joined(separator: ", ")).")
    }
}

enum PauseDuration {
    static func seconds(_ text: String) throws -> UInt64 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let number = UInt64(text.dropLast()), number > 0 else {
            throw ValidationError("expected a duration such as 90s, 30m, 2h or 1d, not \(text)")
        }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: unit)
        guard !overflow, seconds <= PauseArguments.longestSeconds else {
            throw ValidationError("\(text) is longer than the longest pause, \(PauseArguments.longestSeconds / 86_400)d")
        }
        return seconds
    }
}

/// Asks a yes/no question on the terminal; anything but y or yes is no.
enum Confirmation {
    static func ask(_ question: String) -> Bool {
        StandardStream.error.write(question + " [y/N] ")
        guard let answer = readLine()?.lowercased() else { return false }
        return answer == "y" || answer == "yes"
    }
}
