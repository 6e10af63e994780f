import ArgumentParser
import ENAPI
import FoundationEssentials
import Glibc

/// `enctl sightings`: how many devices the radio heard, hour by hour.
struct Sightings: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the sightings per hour (needs group enagent).", discussion: """
        Lists every UTC hour from the first stored sighting (or of the last --hours hours) to the \
        current one: how many sightings the radio recorded (an identifier heard by one adapter in \
        one scan is one sighting, counted in the hour of its first report) and how many distinct \
        rolling proximity identifiers among them (about how many devices: each changes its \
        identifier every 10 to 20 minutes). enagentd counts them; no identifier leaves it. On a \
        terminal a bar per hour shows the sightings. Needs root or the group enagent, since the \
        counts tell when people were near.
        """)

    @Option(help: ArgumentHelp("Only the last <hours> hours, the current one included.", valueName: "hours"))
    var hours: Int?

    @OptionGroup var output: JSONOutput

    func validate() throws {
        if let hours, hours < 1 { throw ValidationError("--hours must be at least 1") }
    }

    func run() throws {
        let now = UInt64(max(0, Date().timeIntervalSince1970))
        let since = hours.map { SightingChart.firstHour(now: now, lastHours: $0) } ?? 0
        let counted = try DaemonClient().call(DaemonClient.API.Methods.getSightingsPerHour, SightingsPerHourRequest(since: since)).hours
        let rows = SightingChart.rows(counted, now: now, lastHours: hours)
        if output.json { return try printJSON(rows) }
        guard !rows.isEmpty else { return print("No sightings stored.") }
        let bars = isatty(1) == 1 ? SightingChart.bars(rows.map(\.sightings), width: 40) : nil
        printColumns([["HOUR (UTC)", "SIGHTINGS", "IDENTIFIERS"] + (bars == nil ? [] : [""])] + rows.enumerated().map { index, row in
            [String(utcTime(Int64(row.hourStart)).prefix(16)), String(row.sightings), String(row.distinctIdentifiers)]
                + (bars.map { [$0[index]] } ?? [])
        })
    }
}

/// The picture `enctl sightings` draws, as pure functions of the daemon's counts.
enum SightingChart {
    static let hour: UInt64 = 3_600

    /// Every hour from the first counted one (or from `lastHours` hours back, the current hour
    /// included) to the current hour or the last counted one, whichever is later; an hour the
    /// daemon did not list had no sighting.
    static func rows(_ counted: [SightingHourRecord], now: UInt64, lastHours: Int?) -> [SightingHourRecord] {
        let current = now - now % hour
        let first: UInt64
        if let lastHours {
            first = firstHour(now: now, lastHours: lastHours)
        } else {
            guard let earliest = counted.first?.hourStart else { return [] }
            first = min(earliest, current)
        }
        let last = max(current, counted.last?.hourStart ?? current)
        let byHour = Dictionary(counted.map { ($0.hourStart, $0) }, uniquingKeysWith: { first, _ in first })
        return stride(from: first, through: last, by: Int(hour)).map {
            byHour[$0] ?? SightingHourRecord(hourStart: $0, sightings: 0, distinctIdentifiers: 0)
        }
    }

    /// The start of the first of the last `lastHours` hours, the current one included.
    static func firstHour(now: UInt64, lastHours: Int) -> UInt64 {
        let current = now - now % hour
        return current - min(UInt64(lastHours - 1), current / hour) * hour
    }

    /// A bar of full blocks per value, the largest `width` long; a value above zero gets at least
    /// a thin one, so that an hour with a sighting never looks like one without.
    static func bars(_ values: [UInt32], width: Int) -> [String] {
        let largest = values.max() ?? 0
        return values.map { value in
            guard value > 0 else { return "" }
            let blocks = Int((Double(value) / Double(largest) * Double(width)).rounded())
            return blocks == 0 ? "▏" : String(repeating: "█", count: blocks)
        }
    }
}
