import ENCore

/// The device's recorded scans, by start, and for a sighting the start of the scan before its
/// own: what Google's matching weighs it by (`SightingRecordWithMetadata.secondsSinceLastScan`,
/// the receiving device's previous scan, whatever that scan heard).
struct ScanHistory {
    private let scans: [ClosedRange<Int64>]
    /// The scan found last: sightings are read mostly in time order.
    private var hint = 0

    /// A sighting stamped this long after its scan's recorded end still belongs to it (its report
    /// waited on the agent's queue while the scan was ended).
    static let lateReportSeconds: Int64 = 1

    init(_ scans: [ClosedRange<Int64>]) { self.scans = scans }

    /// The start of the scan before the one that heard a sighting at `time`; nil when unknown (no
    /// scan recorded before it: sightings of a database older than the records). A sighting
    /// past the end of the last scan that started before it was heard in a scan that was not
    /// recorded (the store failed meanwhile): the scan before its own is that one.
    mutating func previousScanStart(forSightingAt time: Int64) -> Int64? {
        guard let index = lastScan(startedBy: time) else { return nil }
        hint = index
        if time > scans[index].upperBound + Self.lateReportSeconds { return scans[index].lowerBound }
        return index > 0 ? scans[index - 1].lowerBound : nil
    }

    /// The index of the last scan that started at or before `time`.
    private func lastScan(startedBy time: Int64) -> Int? {
        if hint < scans.count, scans[hint].lowerBound <= time, hint + 1 == scans.count || scans[hint + 1].lowerBound > time { return hint }
        var (low, high) = (0, scans.count)  // the first scan that started after `time` lies in low...high
        while low < high {
            let middle = (low + high) / 2
            if scans[middle].lowerBound <= time { low = middle + 1 } else { high = middle }
        }
        return low > 0 ? low - 1 : nil
    }
}
