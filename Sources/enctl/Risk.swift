import ArgumentParser
import ENCore
import FoundationEssentials

/// `enctl risk`: the verdict on the exposure windows by the health authority's rules, enagentd's
/// or one computed here from windows and a risk configuration.
struct Risk: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the risk verdict: what the exposures mean by your health authority's rules.",
        discussion: """
            Without --windows, shows the verdict of enagentd's latest detection (root and members \
            of the group enagent only): the total risk (none, low or increased), the days of low \
            and of increased risk and the latest of each, and the minimum number of distinct \
            encounters of each level. Only increased risk alarms (ExposureDetected, 'enctl watch', \
            the recent-exposure reminder); low risk is below the authority's alert threshold.

            With --windows, computes the verdict here, from exposure windows in the JSON of the \
            Corona-Warn-App's shared test cases (a list of windows with ageInDays, reportType 1-4, \
            infectiousness 1-2, calibrationConfidence and scanInstances of minAttenuation, \
            typicalAttenuation and secondsSinceLastScan; or one case's object with them under \
            exposureWindows), and --risk-config (the standard configuration, LFPH's Wide Net with \
            an alert at 15 weighted minutes a day, when not given). enagentd is not needed.

            --json prints the aggregate with the fields of the Corona-Warn-App's cases without \
            their "exp" prefix (totalRiskLevel 1 low, 2 high; ages in days before today), and \
            risk, model, mostRecentDateWithLowRisk and mostRecentDateWithHighRisk (YYYY-MM-DD, UTC). \
            docs/detection.md describes the models. Exit status: 0; 64 for windows or a \
            configuration that is refused, naming the field.
            """)

    @Option(help: ArgumentHelp("Exposure windows (JSON) to judge here instead of enagentd's.", valueName: "file"), transform: ArgumentValue.inputFile)
    var windows: String?

    @Option(name: .customLong("risk-config"),
            help: ArgumentHelp("Risk configuration (JSON) for --windows: a Corona-Warn-App model, en-express or any-window.", valueName: "file"),
            transform: ArgumentValue.inputFile)
    var riskConfig: String?

    @OptionGroup var output: JSONOutput

    func validate() throws {
        if riskConfig != nil && windows == nil { throw ValidationError("--risk-config judges --windows; enagentd reads its own (enagent.conf's risk-configuration)") }
    }

    func run() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let report: RiskReport
        if let windows {
            let configuration: RiskConfiguration
            do {
                configuration = try riskConfig.map { path in try RiskConfiguration(json: Data(try InputFile.text(path, what: "a risk configuration").utf8)) } ?? .standard
            } catch let error as ConfigurationError {
                throw ValidationError("\(riskConfig ?? ""): \(error)")
            }
            let judged: [ExposureWindow]
            do {
                judged = try RiskWindowsJSON.windows(try InputFile.read(windows, limit: 16 << 20) { "\($0) bytes, more than 16 MiB: not exposure windows" },
                                                     today: UTCDay(containing: now))
            } catch let error as ConfigurationError {
                throw ValidationError("\(windows): \(error)")
            }
            report = RiskReport(verdict: configuration.verdict(of: judged, now: now), model: configuration.model.rawValue, assessedAt: now, now: now)
        } else {
            guard let health = try DaemonClient().healthStatus() else {
                throw CommandError("the risk verdict is shown to root and members of the group \(DaemonClient.API.privilegedGroup) only")
            }
            guard let verdict = health.verdict else {
                return output.json ? try printJSON(RiskReport?.none) : print("No verdict yet: no exposure detection has finished.")
            }
            report = RiskReport(verdict: verdict, model: health.riskModel, assessedAt: Int64(clamping: health.riskAssessedAt), now: now)
        }
        if output.json { return try printJSON(report) }
        report.print()
    }
}

/// The verdict as `enctl risk` shows it.
struct RiskReport: Encodable {
    let verdict: RiskVerdict
    let model: String
    let assessedAt: Int64
    let aggregate: RiskAggregate

    init(verdict: RiskVerdict, model: String, assessedAt: Int64, now: Int64) {
        (self.verdict, self.model, self.assessedAt) = (verdict, model, assessedAt)
        aggregate = RiskAggregate(verdict, today: UTCDay(containing: now))
    }

    private enum CodingKeys: String, CodingKey {
        case risk, model, assessedAt, mostRecentDateWithLowRisk, mostRecentDateWithHighRisk
    }

    func encode(to encoder: any Encoder) throws {
        try aggregate.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(verdict.total.rawValue, forKey: .risk)
        try container.encode(model, forKey: .model)
        try container.encode(utcTime(assessedAt), forKey: .assessedAt)
        try container.encode(verdict.latestLowRiskDay.map(utcDay), forKey: .mostRecentDateWithLowRisk)
        try container.encode(verdict.latestIncreasedRiskDay.map(utcDay), forKey: .mostRecentDateWithHighRisk)
    }

    func print() {
        func days(_ count: Int, latest: Int64?) -> String { count == 0 ? "none" : "\(count), the latest \(utcDay(latest ?? 0))" }
        printColumns([
            ["Risk", verdict.total.rawValue],
            ["Increased-risk days", days(verdict.increasedRiskDays, latest: verdict.latestIncreasedRiskDay)],
            ["Increased-risk encounters", String(verdict.increasedRiskEncounters)],
            ["Low-risk days", days(verdict.lowRiskDays, latest: verdict.latestLowRiskDay)],
            ["Low-risk encounters", String(verdict.lowRiskEncounters)],
            ["Model", model],
            ["Assessed", utcTime(assessedAt)],
        ])
        Swift.print("\n" + verdict.advice)
    }
}

extension RiskVerdict {
    /// What the verdict asks of the person (README's status table says the same).
    var advice: String {
        switch total {
        case .increased:
            return "Increased risk: you were exposed on \(utcDay(latestIncreasedRiskDay ?? 0)). Follow your health authority's advice."
        case .low:
            return "Low risk: encounters with someone who tested positive, below your health authority's alert threshold. No action is needed."
        case .none:
            return "No risk: no encounter that counts by your health authority's rules."
        }
    }
}
