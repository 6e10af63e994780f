import ArgumentParser
import ENAPI
import ENCore
import FoundationEssentials

/// `enctl windows`: the stored exposure windows.
struct Windows: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the exposure windows found by detection (needs group enagent).")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let windows = try DaemonClient().call(DaemonClient.API.Methods.getExposureWindows).windows.map { window in
            WindowRow(date: utcDay(Int64(window.date)), reportType: Int(window.reportType), infectiousness: Int(window.infectiousness),
                      calibrationConfidence: Int(window.calibrationConfidence), scanInstances: window.scanInstances.count,
                      minimumAttenuation: window.scanInstances.compactMap(\.minAttenuation).min(),
                      seconds: window.scanInstances.reduce(0) { $0 + $1.secondsSinceLastScan })
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
        let days = try DaemonClient().call(DaemonClient.API.Methods.getDailySummaries, ConfigurationArgument(configuration: configuration)).summaries
        if json { return try printJSON(days) }
        guard !days.isEmpty else { return print("No exposures.") }
        printColumns([["DAY (UTC)", "MAX SCORE", "SCORE SUM", "WEIGHTED MINUTES"]] + days.map {
            [utcDay($0.date), String($0.maximumScore, fractionDigits: 0), String($0.scoreSum, fractionDigits: 0), String($0.weightedDurationSum / 60, fractionDigits: 1)]
        })
    }
}

/// `enctl exposures`: v1 ExposureInfo.
struct Exposures: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the v1 exposures (ExposureInfo) of the last detection's configuration.")

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let infos = try DaemonClient().call(DaemonClient.API.Methods.getExposureInfo).exposures.map { info in
            ExposureRow(date: utcDay(info.date), durationMinutes: info.durationMinutes, attenuationValue: info.attenuationValue,
                        attenuationDurationsMinutes: info.attenuationDurationsMinutes, transmissionRiskLevel: info.transmissionRiskLevel,
                        totalRiskScore: info.totalRiskScore, daysSinceExposure: info.daysSinceExposure)
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
