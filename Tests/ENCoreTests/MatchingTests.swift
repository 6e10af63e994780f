import ENCore
import TestSupport
import Testing

@Suite struct MatchingTests {
    /// A spread-out, deterministic RPI for group `n`.
    func rpi(_ n: Int) -> RollingProximityIdentifier {
        let seed = UInt64(n)
        return Bytes16(high: seed &* 0x9e37_79b9_7f4a_7c15, low: seed &* 0xc2b2_ae3d_27d4_eb4f)
    }

    @Test func indexFindsEverySightingOfAnRPIAndNothingElse() {
        let sightings = (0..<5_000).map { index in
            Sighting(rpi: rpi(index % 2_500), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: nil,
                     time: Int64(5_000 - index), adapter: "hci0")
        }
        let index = SightingIndex(sightings)
        #expect(index.count == 5_000)
        for group in 0..<2_500 {
            let expected = sightings.filter { $0.rpi == rpi(group) }.map { IndexedSighting(time: $0.time, aem: $0.aem, rssi: $0.rssi) }
            #expect(index.sightings(of: rpi(group)) == expected.sorted { $0.time < $1.time })
        }
        #expect(index.sightings(of: Bytes16(high: 1, low: 2)).isEmpty)
        #expect(SightingIndex([]).sightings(of: .zero).isEmpty)
    }

    /// An index that outgrows its first size keeps everything, with the RSSI, the AEM, the time
    /// and the adapter.
    @Test func anIndexGrowsWithoutLosingASighting() {
        var index = SightingIndex(expectedCount: 10)
        let sightings = (0..<3_000).map { (n: Int) -> Sighting in
            let rssi: Int8? = n % 3 == 0 ? nil : Int8(n % 100 - 100)
            return Sighting(rpi: rpi(n), aem: AssociatedEncryptedMetadata(rawValue: UInt32(n)), rssi: rssi, time: Int64(n) * 1_000, adapter: "hci0",
                            adapterAddress: n % 4 == 0 ? nil : BluetoothAddress(rawValue: 0x001A_7DDA_7100 + UInt64(n % 4)))
        }
        sightings.forEach { index.add($0) }
        #expect(index.count == 3_000)
        #expect(index.adapterAddresses.map(\.description) == ["00:1A:7D:DA:71:01", "00:1A:7D:DA:71:02", "00:1A:7D:DA:71:03"])
        #expect(sightings.allSatisfy { sighting in
            index.sightings(of: sighting.rpi).map { IndexedSighting(time: $0.time, aem: $0.aem, rssi: $0.rssi) }
                == [IndexedSighting(time: sighting.time, aem: sighting.aem, rssi: sighting.rssi)]
                && index.sightings(of: sighting.rpi).map(\.adapterAddress) == [sighting.adapterAddress]
        })
    }

    /// A sighting keeps a byte for its adapter: past 255 adapters (no machine has them), a
    /// sighting counts as of an unknown adapter rather than of another one.
    @Test func adaptersBeyondWhatAByteNumbersCountAsUnknown() {
        let sightings = (0..<300).map { n in
            Sighting(rpi: rpi(n), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: -60, time: 1_000, adapter: "hci0",
                     adapterAddress: BluetoothAddress(rawValue: UInt64(n)))
        }
        let index = SightingIndex(sightings)
        #expect(index.adapterAddresses.count == SightingIndex.maximumAdapterCount)
        #expect(index.sightings(of: rpi(254)).map(\.adapterAddress) == [BluetoothAddress(rawValue: 254)])
        #expect(index.sightings(of: rpi(255)).map(\.adapterAddress) == [nil])
    }

    @Test func bluetoothAddressesReadAsBlueZPrintsThem() {
        #expect(BluetoothAddress("00:1a:7D:da:71:13")?.rawValue == 0x001A_7DDA_7113)
        #expect(BluetoothAddress("00:1a:7D:da:71:13")?.description == "00:1A:7D:DA:71:13")
        #expect(BluetoothAddress(rawValue: 0xFFFF_FFFF_FFFF)?.description == "FF:FF:FF:FF:FF:FF")
        #expect(BluetoothAddress(rawValue: 1 << 48) == nil)
        for text in ["", "hci0", "00:1A:7D:DA:71", "00:1A:7D:DA:71:13:00", "001A7DDA7113", "00-1A-7D-DA-71-13", "0:1A:7D:DA:71:13:",
                     "00:1A:7D:DA:71:1G", " 00:1A:7D:DA:71:1"] {
            #expect(BluetoothAddress(text) == nil, "\(text)")
        }
    }

    @Test func matchesOwnRPIsAndComputesAttenuation() throws {
        let device = try Broadcaster(metadata: Metadata(transmitPower: -10))
        let stranger = try Broadcaster()
        let sightings = [
            try device.sighting(at: device.start + 600, rssi: -70),
            try device.sighting(at: device.start + 1_200, rssi: nil),
            try device.sighting(at: device.start + 1_800, rssi: 5),
            try stranger.sighting(at: stranger.start + 600),
        ]
        let matcher = try KeyMatcher(index: SightingIndex(sightings), rssiCorrections: RssiCorrections(defaultCorrection: 3))
        let match = try #require(try matcher.match(device.key))
        #expect(match.key == device.key)
        // -10 - (-70 + 3) = 57; unknown RSSI stays unknown; -10 - (5 + 3) < 0 floors at 0.
        #expect(match.sightings.map(\.attenuation) == [57, nil, 0])
        #expect(match.sightings.allSatisfy { $0.metadata == device.metadata })
        #expect(try matcher.match(try Broadcaster().key) == nil)
    }

    /// Two receivers heard one phone at the same RSSI: each sighting gets its own adapter's
    /// correction, so the same RSSI makes two attenuations; an adapter the corrections do not
    /// name, and one of unknown address, get the default.
    @Test func eachSightingGetsTheCorrectionOfTheAdapterThatRecordedIt() throws {
        let device = try Broadcaster(metadata: Metadata(transmitPower: -10))
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), builtIn = try #require(BluetoothAddress("B8:27:EB:00:00:01"))
        let unnamed = try #require(BluetoothAddress("B8:27:EB:00:00:02"))
        let sightings = [
            try device.sighting(at: device.start + 600, rssi: -70, adapterAddress: dongle),
            try device.sighting(at: device.start + 1_200, rssi: -70, adapterAddress: builtIn),
            try device.sighting(at: device.start + 1_800, rssi: -70, adapterAddress: unnamed),
            try device.sighting(at: device.start + 2_400, rssi: -70),
        ]
        let corrections = RssiCorrections(defaultCorrection: 1, byAdapter: [dongle: 5, builtIn: -8])
        let found = try KeyMatcher(index: SightingIndex(sightings), rssiCorrections: corrections).match(device.key)
        let match = try #require(found)
        // -10 - (-70 + 5) = 55; -10 - (-70 - 8) = 68; the default: -10 - (-70 + 1) = 59.
        #expect(match.sightings.map(\.attenuation) == [55, 68, 59, 59])
        #expect(match.sightings.allSatisfy { $0.rssi == -70 })
    }

    /// Two adapters heard one RPI in one scan: the one v1 counts is the strongest after each
    /// adapter's correction (Google stores RSSIs calibrated), not the one that reported more.
    @Test func theStrongestOfAScanIsTheStrongestCorrectedRSSI() throws {
        let device = try Broadcaster(metadata: Metadata(transmitPower: -10))
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), builtIn = try #require(BluetoothAddress("B8:27:EB:00:00:01"))
        let sightings = [
            try device.sighting(at: device.start + 600, rssi: -68, adapterAddress: builtIn),
            try device.sighting(at: device.start + 610, rssi: -70, adapterAddress: dongle),
        ]
        let corrections = RssiCorrections(byAdapter: [dongle: 5, builtIn: -4])
        let match = try #require(try KeyMatcher(index: SightingIndex(sightings), rssiCorrections: corrections).match(device.key))
        // -68 - 4 = -72 against -70 + 5 = -65: the dongle's, attenuation -10 - (-65) = 55.
        #expect(match.sightings.map(\.strongestOfItsScan) == [false, true])
        #expect(V1Match(match).sightings == [V1Sighting(time: device.start + 610, attenuation: 55)])
    }

    /// Keys of part of a day, a whole day (from midnight) and one from the afternoon into the next
    /// day: an RPI counts from 12 intervals before its own to the end of the 12th after, past its
    /// key's end too (Google's RollingProximityIdValidator).
    @Test(arguments: [(2_700_000, 10), (2_700_000, 144), (2_700_100, 144)] as [(UInt32, UInt32)])
    func anRPICountsWithinTwelveIntervalsOfItsOwnOnly(start: UInt32, period: UInt32) throws {
        let device = try Broadcaster(start: start, period: period)
        let first = device.key.key.rollingStartIntervalNumber, last = ENIntervalNumber(start + period - 1)
        let cases: [(ENIntervalNumber, Int64, Bool)] = [
            (first, first.unixSeconds - 7_201, false), (first, first.unixSeconds - 7_200, true),
            (first, first.unixSeconds + 7_799, true), (first, first.unixSeconds + 7_800, false),
            (last, last.unixSeconds + 7_799, true), (last, last.unixSeconds + 7_800, false),
        ]
        for (interval, time, counts) in cases {
            let index = SightingIndex([try device.sighting(at: time, interval: interval)])
            #expect((try KeyMatcher(index: index).match(device.key) != nil) == counts, "interval \(interval), time \(time)")
        }
    }

    /// No device broadcasts an RPI for longer than 20 minutes: later sightings of it are replays
    /// (Google's ExposureMatchingTracer.getValidSightingsForRpi).
    @Test func anRPICountsForTwentyMinutesFromItsFirstSightingOnly() throws {
        let device = try Broadcaster()
        let interval = ENIntervalNumber(device.key.key.rollingStartIntervalNumber.rawValue + 30)
        let first = interval.unixSeconds + 60
        let times: [Int64] = [first, first + 600, first + 1_200, first + 1_201, first + 1_800]
        let sightings = try times.map { try device.sighting(at: $0, interval: interval) }
        let match = try #require(try KeyMatcher(index: SightingIndex(sightings)).match(device.key))
        #expect(match.sightings.map(\.time) == [first, first + 600, first + 1_200])
    }

    /// An RPI replayed hours after its interval counts for nothing, even where it is the only sighting.
    @Test func anRPIReplayedHoursLaterDoesNotCount() throws {
        let device = try Broadcaster()
        let interval = ENIntervalNumber(device.key.key.rollingStartIntervalNumber.rawValue + 30)
        let replays = try [3, 5, 10].map { try device.sighting(at: interval.unixSeconds + $0 * 3_600, interval: interval) }
        #expect(try KeyMatcher(index: SightingIndex(replays)).match(device.key) == nil)
        // Seen in its interval first, the replays two hours later are past its 20 minutes.
        let seen = try device.sighting(at: interval.unixSeconds + 30, interval: interval)
        let replayed = try device.sighting(at: interval.unixSeconds + 7_000, interval: interval)
        let match = try #require(try KeyMatcher(index: SightingIndex([seen, replayed])).match(device.key))
        #expect(match.sightings.map(\.time) == [seen.time])
    }

    /// Google's matcher skips RECURSIVE keys (ContactTracingFeature.enableRecursiveTekReportType).
    @Test func recursiveKeysAreNotMatched() throws {
        let device = try Broadcaster(reportType: .recursive)
        let index = SightingIndex([try device.sighting(at: device.start + 60)])
        #expect(try KeyMatcher(index: index).match(device.key) == nil)
        #expect(try KeyMatcher(index: index).match(Broadcaster(key: DiagnosisKey(key: device.key.key)).key) != nil)
    }

    /// Every interval of a whole day's key is found, across the words of the matcher's candidate bits.
    @Test func everyIntervalOfTheDayIsFound() throws {
        let device = try Broadcaster(period: 144)
        let intervals: [Int64] = [0, 1, 62, 63, 64, 65, 100, 127, 128, 129, 143]
        let sightings = try intervals.map { try device.sighting(at: device.start + $0 * 600 + 30) }
        let match = try #require(try KeyMatcher(index: SightingIndex(sightings)).match(device.key))
        #expect(match.sightings.map(\.time) == intervals.map { device.start + $0 * 600 + 30 })
    }

    @Test func onlyIntervalsOfTheRollingPeriodAreDerived() throws {
        let device = try Broadcaster(period: 2)
        let outside = try device.sighting(at: device.start + 1_300)  // third interval: not in a 2-interval key
        #expect(try KeyMatcher(index: SightingIndex([outside])).match(device.key) == nil)
    }

    @Test func implausibleTransmitPowerIsDropped() throws {
        let loud = try Broadcaster(metadata: Metadata(transmitPower: 21))
        let matcher = try KeyMatcher(index: SightingIndex([try loud.sighting(at: loud.start)]))
        #expect(try matcher.match(loud.key) == nil)
        #expect(matcher.implausibleSightings == 1)
    }

    /// The day filters hold every sighting for each key validity it may match (the key's days
    /// ±2 h, across midnight), and refuse almost every RPI never seen.
    @Test func dayFiltersHoldWhatAKeyOfTheDayCanMatch() {
        let day: Int64 = 86_400, firstDay: Int64 = 19_000
        // Sightings over five days, many near midnight, a few at the range's very ends.
        let times = (0..<20_000).map { (n: Int) -> Int64 in
            let spread: Int64 = Int64(n) * 5 * day / 20_000
            return firstDay * day + spread + Int64(n % 5) - 2
        }
        let sightings = times.enumerated().map { n, time in
            Sighting(rpi: rpi(n), aem: AssociatedEncryptedMetadata(rawValue: 0), rssi: nil, time: time, adapter: "hci0")
        }
        let index = MatchingIndex(SightingIndex(sightings))
        #expect(index.sightings.count == sightings.count)
        let tolerance = KeyMatcher.validityTolerance
        // Whole days, part of a day, and a validity from one afternoon into the next day.
        let validities: [Range<Int64>] = (-1..<6).flatMap { d in
            let start = (firstDay + Int64(d)) * day
            return [start..<start + day, start + 3_600..<start + 7_200, start + day / 2..<start + day + day / 2]
        }
        for validity in validities {
            let within = sightings.filter { $0.time >= validity.lowerBound - tolerance && $0.time < validity.upperBound + tolerance }
            index.withLookup(validity: validity) { _, filter, nextDay in
                let missed = within.filter { !filter.mayContain($0.rpi) && !(nextDay?.mayContain($0.rpi) ?? false) }
                #expect(missed.count == 0, "sightings of \(validity) missed")
                let spansTwoDays = (validity.upperBound - 1) / day > validity.lowerBound / day
                #expect((nextDay != nil) == spansTwoDays)
                let unseen = (100_000..<110_000).filter { n in filter.mayContain(rpi(n)) }
                #expect(unseen.count < 300, "\(unseen.count) of 10,000 RPIs never seen pass the filter of \(validity) (1.7 % should, on average)")
            }
        }
        // A day far from every sighting has an empty filter.
        index.withLookup(validity: 0..<day) { _, filter, _ in
            #expect(!sightings.contains { filter.mayContain($0.rpi) })
        }
        MatchingIndex(SightingIndex([])).withLookup(validity: 0..<day) { _, filter, nextDay in
            #expect(!filter.mayContain(rpi(1)) && nextDay == nil)
        }
    }
}
