import ArgumentParser
import ENAPI
import ENCore
import FoundationEssentials

/// `enctl windows`: the stored exposure windows.
struct Windows: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the exposure windows found by detection (needs group enagent).")

    @OptionGroup var output: JSONOutput

    func run() throws {
        let windows = try DaemonClient().call(DaemonClient.API.Methods.getExposureWindows).windows.map { window in
            WindowJSON(date: Int64(window.date), reportType: ReportType(rawValue: Int(window.reportType)),
                       infectiousness: Infectiousness(rawValue: Int(window.infectiousness)),
                       calibrationConfidence: Int(window.calibrationConfidence), scanInstances: window.scanInstances)
        }
        if output.json { return try printJSON(windows) }
        guard !windows.isEmpty else { return print("No exposure windows.") }
        printColumns([["DAY (UTC)", "REPORT TYPE", "INFECTIOUSNESS", "SCANS", "MIN ATTENUATION", "DURATION"]] + windows.map {
            [$0.date, $0.reportType, $0.infectiousness, String($0.scanInstances.count),
             $0.minimumAttenuation.map { "\($0) dB" } ?? "unknown", "\($0.seconds / 60) min"]
        })
    }
}

/// `enctl summary`: v2 daily summaries of the stored windows.
struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Score the exposure windows per day (v2 daily summaries).")

    @OptionGroup var configuration: ConfigurationOption

    @OptionGroup var output: JSONOutput

    func run() throws {
        let days = try DaemonClient().call(DaemonClient.API.Methods.getDailySummaries,
                                           ConfigurationArgument(configuration: try configuration.configurationText())).summaries
        if output.json { return try printJSON(days) }
        guard !days.isEmpty else { return print("No exposures.") }
        printColumns([["DAY (UTC)", "MAX SCORE", "SCORE SUM", "WEIGHTED MINUTES"]] + days.map {
            [utcDay($0.date), String($0.maximumScore, fractionDigits: 0), String($0.scoreSum, fractionDigits: 0), String($0.weightedDurationSum / 60, fractionDigits: 1)]
        })
    }
}

/// `enctl exposures`: v1 ExposureInfo.
struct Exposures: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the v1 exposures (ExposureInfo) of the last detection's configuration.")

    @OptionGroup var output: JSONOutput

    func run() throws {
        let infos = try DaemonClient().call(DaemonClient.API.Methods.getExposureInfo).exposures.map { info in
            ExposureRow(date: utcDay(info.date), durationMinutes: info.durationMinutes, attenuationValue: info.attenuationValue,
                        attenuationDurationsMinutes: info.attenuationDurationsMinutes, transmissionRiskLevel: info.transmissionRiskLevel,
                        totalRiskScore: info.totalRiskScore, daysSinceExposure: info.daysSinceExposure)
        }
        if output.json { return try printJSON(infos) }
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
