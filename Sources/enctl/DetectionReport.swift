import ENCore
import ENKeyFiles

/// What `enctl detect offline` found, as JSON or as text for a person.
struct DetectionReport: Encodable {
    struct File: Encodable {
        let path: String
        let region: String
        let keyCount: Int
        let signature: SignatureStatus
    }

    struct Day: Encodable {
        let date: String
        let maximumScore: Double
        let scoreSum: Double
        let weightedDurationSum: Double
    }

    struct V1: Encodable {
        let summary: ExposureSummaryV1
        let exposureInfos: [ExposureInfo]
    }

    let files: [File]
    let sightingCount: Int
    let keysChecked: Int
    let matchedKeyCount: Int
    let exposureWindows: [WindowJSON]
    let dailySummaries: [Day]
    let v1: V1?

    init(files: [File], sightingCount: Int, keysChecked: Int, matchedKeyCount: Int, windows: [ExposureWindow],
         dailySummaries: [DailySummary], v1: V1?) {
        self.files = files
        self.sightingCount = sightingCount
        self.keysChecked = keysChecked
        self.matchedKeyCount = matchedKeyCount
        exposureWindows = windows.map(WindowJSON.init)
        self.dailySummaries = dailySummaries.map {
            Day(date: utcDay($0.date), maximumScore: $0.maximumScore, scoreSum: $0.scoreSum, weightedDurationSum: $0.weightedDurationSum)
        }
        self.v1 = v1
    }

    func printText() {
        let fileWord = files.count == 1 ? "file" : "files"
        print("Checked \(keysChecked) keys from \(files.count) \(fileWord) against \(sightingCount) sightings.")
        printColumns(files.map { ["  \($0.path)", "region \($0.region)", "\($0.keyCount) keys", "signature \($0.signature.rawValue)"] })
        print("")
        guard matchedKeyCount > 0 else {
            print("No exposure found.")
            return
        }
        print("\(matchedKeyCount) \(matchedKeyCount == 1 ? "key" : "keys") matched, \(exposureWindows.count) exposure \(exposureWindows.count == 1 ? "window" : "windows").")
        print("\nEXPOSURE WINDOWS (UTC days)")
        printColumns([["DATE", "REPORT TYPE", "INFECTIOUSNESS", "SCANS", "MINUTES", "MIN ATTENUATION"]] + exposureWindows.map { window in
            [window.date, window.reportType, window.infectiousness, "\(window.scanInstances.count)",
             String(Double(window.seconds) / 60, fractionDigits: 1), window.minimumAttenuation.map { "\($0) dB" } ?? "unknown"]
        })
        print("\nDAILY SUMMARIES (v2)")
        printColumns([["DATE", "MAX SCORE", "SCORE SUM", "WEIGHTED MINUTES"]] + dailySummaries.map { day in
            [day.date, String(day.maximumScore, fractionDigits: 0), String(day.scoreSum, fractionDigits: 0),
             String(day.weightedDurationSum / 60, fractionDigits: 1)]
        })
        if let v1 {
            print("\nV1 SUMMARY: maximum risk score \(v1.summary.maximumRiskScore), sum \(v1.summary.summationRiskScore), "
                  + "attenuation durations \(v1.summary.attenuationDurationsMinutes.map { String($0) }.joined(separator: "/")) min")
        }
    }
}
