import ArgumentParser
import ENBus
import ENCore
import Foundation

/// `enctl windows`: the stored exposure windows.
struct Windows: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the exposure windows found by detection (needs group enagent).")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let reply = try DaemonClient().call("GetExposureWindows")
        let windows = (reply.first?.elements ?? []).compactMap { value -> WindowRow? in
            guard let fields = value.fields, fields.count == 5 else { return nil }
            let scans = (fields[4].elements ?? []).compactMap { $0.fields }
            return WindowRow(date: utcDay(fields[0].integer ?? 0), reportType: Int(fields[1].integer ?? 0), infectiousness: Int(fields[2].integer ?? 0),
                             calibrationConfidence: Int(fields[3].integer ?? 0), scanInstances: scans.count,
                             minimumAttenuation: scans.compactMap { $0[0].integer }.filter { $0 >= 0 }.min().map(Int.init),
                             seconds: scans.reduce(0) { $0 + Int($1[2].integer ?? 0) })
        }
        if json { return try printJSON(windows) }
        guard !windows.isEmpty else { return print("No exposure windows.") }
        printColumns([["DAY (UTC)", "REPORT TYPE", "INFECTIOUSNESS", "SCANS", "MIN ATTENUATION", "DURATION"]] + windows.map {
            [$0.date, Self.reportTypeName($0.reportType), Self.infectiousnessName($0.infectiousness), String($0.scanInstances),
             $0.minimumAttenuation.map { "\($0) dB" } ?? "unknown", "\($0.seconds / 60) min"]
        })
    }

    static func reportTypeName(_ value: Int) -> String {
        switch ReportType(rawValue: value) {
        case .confirmedTest?: return "confirmed test"
        case .confirmedClinicalDiagnosis?: return "clinical diagnosis"
        case .selfReport?: return "self-reported"
        case .recursive?: return "recursive"
        default: return "unknown (\(value))"
        }
    }

    static func infectiousnessName(_ value: Int) -> String {
        switch Infectiousness(rawValue: value) {
        case .high?: return "high"
        case .standard?: return "standard"
        default: return "none"
        }
    }

    struct WindowRow: Encodable {
        var date: String, reportType: Int, infectiousness: Int, calibrationConfidence: Int, scanInstances: Int
        var minimumAttenuation: Int?, seconds: Int
    }
}

/// `enctl summary`: v2 daily summaries of the stored windows.
struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Score the exposure windows per day (v2 daily summaries).")

    @Option(help: ArgumentHelp("Exposure configuration JSON (default: the protocol's defaults).", valueName: "file"))
    var config: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let configuration = try config.map { try InputFile.text($0, what: "an exposure configuration") } ?? ""
        let reply = try DaemonClient().call("GetDailySummaries", [.string(configuration)])
        let days = (reply.first?.elements ?? []).compactMap { value -> DailySummary? in
            guard let fields = value.fields, fields.count == 4, case .double(let maximum) = fields[1], case .double(let sum) = fields[2],
                  case .double(let duration) = fields[3] else { return nil }
            return DailySummary(date: fields[0].integer ?? 0, maximumScore: maximum, scoreSum: sum, weightedDurationSum: duration)
        }
        if json { return try printJSON(days) }
        guard !days.isEmpty else { return print("No exposures.") }
        printColumns([["DAY (UTC)", "MAX SCORE", "SCORE SUM", "WEIGHTED MINUTES"]] + days.map {
            [utcDay($0.date), String(format: "%.0f", $0.maximumScore), String(format: "%.0f", $0.scoreSum), String(format: "%.1f", $0.weightedDurationSum / 60)]
        })
    }
}

/// `enctl exposures`: v1 ExposureInfo.
struct Exposures: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the v1 exposures (ExposureInfo) of the last detection's configuration.")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let reply = try DaemonClient().call("GetExposureInfo")
        let infos = (reply.first?.elements ?? []).compactMap { value -> ExposureRow? in
            guard let fields = value.fields, fields.count == 7 else { return nil }
            let attenuation = fields[2].integer ?? -1
            return ExposureRow(date: utcDay(fields[0].integer ?? 0), durationMinutes: Int(fields[1].integer ?? 0),
                               attenuationValue: attenuation < 0 ? nil : Int(attenuation),
                               attenuationDurationsMinutes: (fields[3].elements ?? []).map { Int($0.integer ?? 0) },
                               transmissionRiskLevel: Int(fields[4].integer ?? 0), totalRiskScore: Int(fields[5].integer ?? 0),
                               daysSinceExposure: Int(fields[6].integer ?? 0))
        }
        if json { return try printJSON(infos) }
        guard !infos.isEmpty else { return print("No exposures.") }
        printColumns([["DAY (UTC)", "DURATION", "ATTENUATION", "RISK"]] + infos.map {
            [$0.date, "\($0.durationMinutes) min", $0.attenuationValue.map { "\($0) dB" } ?? "unknown", String($0.totalRiskScore)]
        })
    }

    struct ExposureRow: Encodable {
        var date: String, durationMinutes: Int, attenuationValue: Int?, attenuationDurationsMinutes: [Int]
        var transmissionRiskLevel: Int, totalRiskScore: Int, daysSinceExposure: Int
    }
}

extension DBusValue {
    /// The fields of a structure.
    var fields: [DBusValue]? {
        if case .structure(let fields) = unwrapped { return fields }
        return nil
    }
}
