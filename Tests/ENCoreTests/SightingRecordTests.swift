import ENCore
import TestSupport
import Testing

/// Receptions merged into sightings (`SightingRecord`, `MergedSightings`) as the agent stores
/// them, and matching on them: it weighs every reception by its own time and RSSI, so a
/// detection on merged sightings finds what one on the receptions finds.
@Suite struct SightingRecordTests {
    let dongle = BluetoothAddress(rawValue: 0x001A_7DDA_7113)!

    func reception(_ seed: UInt64, at time: Int64, rssi: Int8? = -60, aem: UInt32 = 7, adapter: String = "hci0",
                   adapterAddress: BluetoothAddress? = nil) -> Sighting {
        Sighting(rpi: Bytes16(high: seed, low: ~seed), aem: AssociatedEncryptedMetadata(rawValue: aem), rssi: rssi, time: time, adapter: adapter,
                 adapterAddress: adapterAddress)
    }

    /// A reception joins its identifier's latest sighting when it has the same AEM and adapter and
    /// comes at most 25.5 s after the sighting's first (Google's ContactRecordDataStore
    /// .isSameScanCycle), never before it, and the sighting has room; else it starts one.
    @Test func receptionsOfOneScanAreOneSighting() {
        let merged = MergedSightings([
            reception(1, at: 1_000, rssi: -60), reception(2, at: 1_000), reception(1, at: 1_003, rssi: nil), reception(1, at: 1_025, rssi: -70),
            reception(1, at: 1_026), reception(1, at: 1_030),  // 26 s after the first: the next scan
            reception(1, at: 1_027, aem: 8),  // another AEM
            reception(1, at: 1_027, adapter: "hci1"), reception(1, at: 1_027, adapterAddress: dongle),
            reception(2, at: 999),  // the clock stepped back
        ])
        #expect(merged.records.map(\.receptions.count) == [3, 1, 2, 1, 1, 1, 1])
        #expect(merged.records[0].receptions == [SightingRecord.Reception(secondsAfterFirst: 0, rssi: -60), SightingRecord.Reception(secondsAfterFirst: 3, rssi: nil),
                                                 SightingRecord.Reception(secondsAfterFirst: 25, rssi: -70)])
        #expect(merged.records[0].sightings == [reception(1, at: 1_000, rssi: -60), reception(1, at: 1_003, rssi: nil), reception(1, at: 1_025, rssi: -70)])
        #expect(merged.records.map(\.time) == [1_000, 1_000, 1_026, 1_027, 1_027, 1_027, 999])

        let flood = MergedSightings((0..<SightingRecord.maximumReceptions + 1).map { _ in reception(3, at: 2_000) })
        #expect(flood.records.map(\.receptions.count) == [SightingRecord.maximumReceptions, 1], "a full sighting takes no more")

        var closed = MergedSightings([reception(4, at: 3_000)])
        closed.closeAll()
        let joinedAClosedOne = closed.merge(reception(4, at: 3_001))
        #expect(!joinedAClosedOne, "a scan's sightings never reach into the next")
        closed.start(reception(4, at: 3_001))
        closed.removeFirst(1)
        let joinedTheLatest = closed.merge(reception(4, at: 3_002))
        #expect(joinedTheLatest && closed.records.map(\.receptions.count) == [2], "the latest stays open")
    }

    /// The start of the receiving device's scan before the one at `time`: scans every 5 minutes.
    static func previousScan(before time: Int64) -> Int64 { time - time % 300 - 300 }

    /// Receptions of one key's RPIs at the edges of every rule that weighs a reception's time,
    /// each scan's with others of the same RPI within 25 s: what merging must not change.
    func receptionsAtTheEdges(of device: Broadcaster) throws -> [Sighting] {
        let first = device.key.key.rollingStartIntervalNumber
        let counted = (Int64(first.rawValue) - 12) * 600  // where the first RPI starts to count: 2 h before the key's day
        var heard = [Sighting]()
        func scan(_ start: Int64, _ offsets: [Int64], interval: ENIntervalNumber = first, rssi: Int8 = -60, adapterAddress: BluetoothAddress? = nil) throws {
            for (number, offset) in offsets.enumerated() {
                var sighting = try device.sighting(at: start + offset, rssi: rssi - Int8(number % 3), interval: interval, adapterAddress: adapterAddress)
                sighting.previousScanTime = Self.previousScan(before: start + offset)
                heard.append(sighting)
            }
        }
        // A scan that began before the first RPI counts (in the day before the key's, whose
        // filter alone would hold its first reception) and reaches into it.
        try scan(counted - 10, [0, 5, 10, 15, 22])
        // Its 20 minutes end within a scan: 1,200 s after its first counted reception counts, 1,201 not.
        try scan(counted + 1_195, [0, 5, 6, 9])
        // A scan across a minute's turn, heard by two adapters, and its window's 30 minutes
        // ending within a scan of the next RPI.
        let later = ENIntervalNumber(first.rawValue + 30), start = later.unixSeconds + 57
        try scan(start, [0, 2, 4, 7], interval: later)
        try scan(start + 1, [0, 3, 6], interval: later, rssi: -50, adapterAddress: dongle)
        try scan(start + 1_790, [0, 9, 10, 11, 20], interval: ENIntervalNumber(later.rawValue + 2))
        return heard
    }

    /// Merged sightings read by reference, as the agent database's are.
    struct MergedRecords: SightingResolver {
        let records: [SightingRecord]

        func details(of sightings: [SightingReference]) throws -> [SightingDetails?] {
            sightings.map { sighting in
                let record = records[Int(sighting.reference)]
                guard record.rpi == sighting.rpi else { return nil }
                return SightingDetails(aem: record.aem, adapterAddress: record.adapterAddress, receptions: record.receptions.map { reception in
                    let time = record.time + Int64(reception.secondsAfterFirst)
                    return SightingDetails.Reception(reception, scanGap: ScanGap(time: time, previousScanTime: SightingRecordTests.previousScan(before: time)))
                })
            }
        }
    }

    @Test func matchingOnMergedSightingsFindsWhatItFindsOnTheirReceptions() throws {
        let device = try Broadcaster(start: 2_700_000)
        let heard = try receptionsAtTheEdges(of: device)
        let merged = MergedSightings(heard)
        #expect(merged.count == 5 && heard.count == 21)
        var byReference = SightingIndex(expectedCount: merged.count, resolver: MergedRecords(records: merged.records))
        for (number, record) in merged.records.enumerated() { byReference.add(rpi: record.rpi, time: record.time, reference: Int64(number)) }
        #expect(byReference.count == merged.count)

        let corrections = RssiCorrections(defaultCorrection: 0, byAdapter: [dongle: -15])
        let onReceptions = try #require(try KeyMatcher(index: SightingIndex(heard), rssiCorrections: corrections).match(device.key))
        let onMerged = try #require(try KeyMatcher(index: byReference, rssiCorrections: corrections).match(device.key))
        #expect(onMerged == onReceptions)
        let counted = (Int64(device.key.key.rollingStartIntervalNumber.rawValue) - 12) * 600
        #expect(onMerged.sightings.map(\.time).filter { $0 < counted + 1_300 } == [counted, counted + 5, counted + 12, counted + 1_195, counted + 1_200],
                "the receptions within the RPI's counted times and its 20 minutes, and only those")
        let windows = ExposureWindowing.windows(for: onMerged, configuration: ExposureConfigurationV2())
        #expect(windows == ExposureWindowing.windows(for: onReceptions, configuration: ExposureConfigurationV2()) && windows.count == 3)
        #expect(V1Match(onMerged) == V1Match(onReceptions))
        for rpi in Set(heard.map(\.rpi)) {
            #expect(try byReference.resolvedSightings(of: rpi) == SightingIndex(heard).sightings(of: rpi))
        }
    }
}
