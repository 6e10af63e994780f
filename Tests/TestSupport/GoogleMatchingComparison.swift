import ENCore
import Testing

/// What Google's code gave for a scenario, in the forms enagent reports it, for the tests that run
/// enagent's detection on the fixture: `enctl detect offline` (CommandTests) and enagentd's
/// detection session and methods (EnagentdTests). Every field is compared.
extension GoogleMatchingFixture.Scenario {
    /// A window as enagent and Google's result both tell it; `tek` (hex) when the side tells the
    /// window's key (enctl's JSON and the store do, the D-Bus API does not).
    public struct ComparableWindow: Comparable, CustomStringConvertible, Sendable {
        public var tek: String?
        /// Unix seconds of the window's UTC midnight.
        public var date: Int64
        public var reportType: ReportType
        public var infectiousness: Infectiousness
        public var calibrationConfidence: Int
        /// Each scan instance's minimum and typical attenuation and seconds since the last scan
        /// (an unknown attenuation as -1, as the API carries it).
        public var scans: [[Int]]

        public init(tek: String?, date: Int64, reportType: ReportType, infectiousness: Infectiousness, calibrationConfidence: Int,
                    scans: [ScanInstance]) {
            (self.tek, self.date, self.reportType, self.infectiousness) = (tek, date, reportType, infectiousness)
            self.calibrationConfidence = calibrationConfidence
            self.scans = scans.map { [$0.minAttenuation ?? -1, $0.typicalAttenuation ?? -1, $0.secondsSinceLastScan] }
        }

        /// An exposure window of enagent's, with its key when `withKey`.
        public init(_ window: ExposureWindow, withKey: Bool = true) {
            self.init(tek: withKey ? window.diagnosisKey.key.keyData.hex : nil, date: window.date, reportType: window.reportType,
                      infectiousness: window.infectiousness, calibrationConfidence: window.calibrationConfidence, scans: window.scanInstances)
        }

        public var description: String {
            "\(tek ?? "-") \(date) \(reportType) \(infectiousness) confidence \(calibrationConfidence) scans \(scans)"
        }

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.description < rhs.description }
    }

    /// Google's windows, sorted; with their keys when `withKeys`.
    public func expectedWindows(withKeys: Bool = true) -> [ComparableWindow] {
        expected.exposureWindows.map { window in
            ComparableWindow(tek: withKeys ? keys[window.key].tek : nil, date: window.daysSinceEpoch * 86_400,
                             reportType: ReportType(rawValue: window.reportType)!, infectiousness: Infectiousness(rawValue: window.infectiousness)!,
                             calibrationConfidence: window.calibrationConfidence,
                             scans: window.scanInstances.map {
                                 ScanInstance(minAttenuation: $0.minAttenuation, typicalAttenuation: $0.typicalAttenuation,
                                              secondsSinceLastScan: $0.secondsSinceLastScan)
                             })
        }.sorted()
    }

    /// Expects `summaries` (oldest first) to be Google's daily summaries: the same days, and
    /// scores equal to rounding (Google weighs with doubles of 0...2.5, enagent with percentages).
    public func expectDailySummaries(_ summaries: [DailySummary], sourceLocation: SourceLocation = #_sourceLocation) {
        let google = expected.dailySummaries
        #expect(summaries.map(\.date) == google.map { $0.daysSinceEpoch * 86_400 }, sourceLocation: sourceLocation)
        for (summary, google) in zip(summaries, google) {
            for (name, value, expected) in [("maximumScore", summary.maximumScore, google.summaryData.maximumScore),
                                            ("scoreSum", summary.scoreSum, google.summaryData.scoreSum),
                                            ("weightedDurationSum", summary.weightedDurationSum, google.summaryData.weightedDurationSum)] {
                #expect(abs(value - expected) <= 1e-9 * max(1, abs(expected)), "\(name) of \(summary.date): \(value), Google \(expected)",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Google's v1 exposures as enagent reports them (ExposureInfo), in Google's order: its
    /// results in the order it matched their keys (the scenario's), each key's exposure records
    /// in the order findExposures made them, oldest day first (keys of one day as Google's order
    /// has them). One per exposure record, dated at its key's UTC day, durations in minutes (at
    /// most 30), the attenuation durations in 5-minute steps (to the nearest, at most 30), days
    /// since the key's start at `now`.
    public func expectedExposureInfos(now: Int64) -> [ExposureInfo] {
        let minutes = { (seconds: Int) in min(30, (seconds + 150) / 300 * 5) }
        let day = { (result: GoogleMatchingFixture.ExposureResult) in result.dateMillisSinceEpoch / 86_400_000 }
        let byDay = expected.v1ExposureResults.enumerated().sorted { (day($0.element), $0.offset) < (day($1.element), $1.offset) }
        return byDay.flatMap { _, result in
            let start = result.dateMillisSinceEpoch / 1_000
            return result.exposureRecords.map { record in
                ExposureInfo(date: start / 86_400 * 86_400, durationMinutes: min(30, record.durationSeconds / 60),
                             attenuationValue: record.attenuationValue, attenuationDurationsMinutes: record.attenuationDurations.map(minutes),
                             transmissionRiskLevel: record.transmissionRiskLevel, totalRiskScore: record.riskScore,
                             daysSinceExposure: Int((now - start) / 86_400))
            }
        }
    }

    /// The v1 summary's fields, as enagent gives them.
    public struct V1SummaryFields: Equatable, Sendable {
        public var daysSinceLastExposure: Int?
        public var matchedKeyCount: Int
        public var maximumRiskScore: Int
        public var summationRiskScore: Int
        public var attenuationDurationsMinutes: [Int]

        public init(daysSinceLastExposure: Int?, matchedKeyCount: Int, maximumRiskScore: Int, summationRiskScore: Int,
                    attenuationDurationsMinutes: [Int]) {
            (self.daysSinceLastExposure, self.matchedKeyCount, self.maximumRiskScore) = (daysSinceLastExposure, matchedKeyCount, maximumRiskScore)
            (self.summationRiskScore, self.attenuationDurationsMinutes) = (summationRiskScore, attenuationDurationsMinutes)
        }

        public init(_ summary: ExposureSummaryV1) {
            self.init(daysSinceLastExposure: summary.daysSinceLastExposure, matchedKeyCount: summary.matchedKeyCount,
                      maximumRiskScore: summary.maximumRiskScore, summationRiskScore: summary.summationRiskScore,
                      attenuationDurationsMinutes: summary.attenuationDurationsMinutes)
        }
    }

    /// Google's per-key v1 results summed as enagent sums them: the keys with an exposure, their
    /// highest and summed risk scores, the attenuation durations of all in 5-minute steps (to the
    /// nearest, at most 30), the fewest days since a key's start at `now`.
    public func expectedV1Summary(now: Int64) -> V1SummaryFields {
        let results = expected.v1ExposureResults
        let seconds = results.reduce([0, 0, 0]) { sum, result in zip(sum, result.attenuationDurations).map(+) }
        return V1SummaryFields(daysSinceLastExposure: results.map { Int((now - $0.dateMillisSinceEpoch / 1_000) / 86_400) }.min(),
                               matchedKeyCount: results.count, maximumRiskScore: results.map(\.maxRiskScore).max() ?? 0,
                               summationRiskScore: results.reduce(0) { $0 + $1.totalRiskScore },
                               attenuationDurationsMinutes: seconds.map { min(30, ($0 + 150) / 300 * 5) })
    }
}

extension GoogleMatchingFixture.Scenario {
    /// Scans that one device could have recorded (each from its start to its end, as enagentd's
    /// `scan` table holds them) and that give every sighting of the scenario, by the store's rule
    /// (`ScanHistory`: the start of the scan before the one that heard it, or of the scan it came
    /// after when it came after that scan's end), a previous scan in the same minute as its
    /// `previousScanTime`, which is all that Google's `secondsSinceLastScan` reads of it
    /// (60 × min(5, whole minutes between)); five minutes or more is any time before that, and an
    /// unknown one counts as a scan two minutes before (Google's default, 120 s).
    ///
    /// nil when no one device's scans can: the generator draws each encounter's previous scans by
    /// themselves, so that one sighting may say the previous scan was at 12:03 and a later one
    /// that it was at 12:02, which a device that scans on one clock never records.
    public var deviceScans: [ClosedRange<Int64>]? {
        ScanDerivation(sightings: sightings.map { ($0.time, $0.previousScanTime) }).scans()
    }
}

/// A search for scans that give each sighting its previous scan (`deviceScans`): sightings in time
/// order, each heard in the latest scan, after it, or in a new one, trying the others when a
/// later sighting finds no place. A scan's start is kept as a range until a sighting needs it in
/// a given minute.
struct ScanDerivation {
    private struct Scan {
        /// The start lies in low...high.
        var low: Int64, high: Int64
        /// The last sighting heard in it; nil for one that heard nothing (it ends where it starts).
        var end: Int64?
    }

    private struct State {
        var scans = [Scan]()
        var lastTime: Int64?
        /// Whether the last sighting was heard in the last scan (a later one may be heard in it too).
        var inLastScan = false
    }

    /// Far enough before any time to add to without overflowing.
    private static let longAgo = Int64.min / 4
    /// Search steps before giving up.
    private static let budget = 200_000

    /// Each sighting's time and the range its previous scan's start must fall in.
    private let targets: [(time: Int64, previous: ClosedRange<Int64>)]

    init(sightings: [(time: Int64, previousScanTime: Int64?)]) {
        targets = sightings.sorted { $0.time < $1.time }.map { time, previousScanTime in
            let minute = time / 60
            let back = previousScanTime.map { min(Int64(ScanGap.maximumMinutes), minute - $0 / 60) } ?? Int64(ScanGap.unknownMinutes)
            let start = (minute - back) * 60
            return (time, (back >= Int64(ScanGap.maximumMinutes) ? Self.longAgo : start)...(start + 59))
        }
    }

    func scans() -> [ClosedRange<Int64>]? {
        var steps = 0
        guard let state = search(State(), from: 0, steps: &steps) else { return nil }
        return state.scans.map { $0.high...($0.end ?? $0.high) }
    }

    private func search(_ state: State, from index: Int, steps: inout Int) -> State? {
        guard index < targets.count else { return state }
        steps += 1
        guard steps <= Self.budget else { return nil }
        for next in choices(after: state, for: targets[index]) {
            if let found = search(next, from: index + 1, steps: &steps) { return found }
        }
        return nil
    }

    private func choices(after state: State, for target: (time: Int64, previous: ClosedRange<Int64>)) -> [State] {
        let (time, window) = target
        func narrowed(_ scan: Scan, to range: ClosedRange<Int64>) -> Scan? {
            let low = max(scan.low, range.lowerBound), high = min(scan.high, range.upperBound)
            return low <= high ? Scan(low: low, high: high, end: scan.end) : nil
        }
        var choices = [State]()
        let scans = state.scans, after = (state.lastTime ?? Self.longAgo) + 1
        if let last = scans.last {
            // Heard in the last scan too: the scan before it is the previous one.
            if state.inLastScan, scans.count >= 2, let previous = narrowed(scans[scans.count - 2], to: window) {
                var next = state
                next.scans[scans.count - 2] = previous
                next.scans[scans.count - 1].end = time
                next.lastTime = time
                choices.append(next)
            }
            // Heard after the last scan's end (the store's late report): that scan is the previous one.
            if let end = last.end, time > end + 1, let previous = narrowed(last, to: window) {
                choices.append(State(scans: scans.dropLast() + [previous], lastTime: time, inLastScan: false))
            } else if last.end == nil, window.lowerBound <= time - 2, let previous = narrowed(last, to: window.lowerBound...min(window.upperBound, time - 2)) {
                choices.append(State(scans: scans.dropLast() + [previous], lastTime: time, inLastScan: false))
            }
            // Heard in a new scan, after every sighting before: the last scan is the previous one.
            if let previous = narrowed(last, to: window), max(after, previous.high + 1) <= time {
                choices.append(State(scans: scans.dropLast() + [previous, Scan(low: max(after, previous.high + 1), high: time, end: time)],
                                     lastTime: time, inLastScan: true))
            }
        }
        // A scan that heard nothing, in the window, then a new one that heard it.
        let lower = max(window.lowerBound, after, (scans.last?.high ?? Self.longAgo) + 1), upper = min(window.upperBound, time - 1)
        if lower <= upper {
            // The earliest leaves the new scan the most room; the latest is the other end.
            for start in Set(lower < Self.longAgo / 2 ? [upper] : [lower, upper]).sorted() {
                choices.append(State(scans: scans + [Scan(low: start, high: start, end: nil), Scan(low: start + 1, high: time, end: time)],
                                     lastTime: time, inLastScan: true))
            }
        }
        return choices
    }
}
