import ENAgent
import ENCore
import ENStore
import TestSupport
import Testing

@Suite struct KeyScheduleTests {
    let directory = TemporaryDirectory()
    /// 2020-04-02 00:00 UTC, the official vectors' key start.
    let midnight: Int64 = 1_585_785_600
    let metadata = Metadata(transmitPower: -4)

    func openStore() throws -> AgentStore { try AgentStore(path: directory.file("enagent.db")) }

    @Test func oneKeyPerUTCDayChangingExactlyAtMidnight() throws {
        let clock = SimulatedClock(midnight)
        let schedule = try KeySchedule(store: try openStore(), clock: clock)
        let first = try schedule.key()
        #expect(first.rollingStartIntervalNumber.rawValue == 2_642_976)
        #expect(first.rollingPeriod == 144)
        clock.advance(by: 86_399)
        #expect(try schedule.key() == first)
        clock.advance(by: 1)
        let second = try schedule.key()
        #expect(second.keyData != first.keyData)
        #expect(second.rollingStartIntervalNumber.rawValue == 2_642_976 + 144)
    }

    @Test func aRestartTheSameDayKeepsTheKey() throws {
        let clock = SimulatedClock(midnight + 3_600)
        let before = try KeySchedule(store: try openStore(), clock: clock).key()
        clock.advance(by: 7_200)
        let store = try openStore()
        #expect(try KeySchedule(store: store, clock: clock).key() == before)
        #expect(try store.temporaryExposureKeys(validAfter: 0).count == 1)
    }

    @Test func broadcastChangesEveryIntervalAndDerivesFromTheDaysKey() throws {
        let clock = SimulatedClock(midnight)
        let schedule = try KeySchedule(store: try openStore(), clock: clock)
        let crypto = try ExposureCrypto()
        let key = try schedule.key()
        let rpik = crypto.rollingProximityIdentifierKey(for: key.keyData)
        let aemk = crypto.associatedEncryptedMetadataKey(for: key.keyData)
        let expected = try crypto.rollingProximityIdentifiers(key: rpik, from: key.rollingStartIntervalNumber, count: 144)
        var seen = [RollingProximityIdentifier]()
        for step in 0..<144 {
            let early = try schedule.broadcast(metadata: metadata)
            clock.advance(by: 599)
            #expect(try schedule.broadcast(metadata: metadata) == early, "same interval, same broadcast")
            clock.advance(by: 1)
            #expect(early.interval.rawValue == key.rollingStartIntervalNumber.rawValue + UInt32(step))
            #expect(early.serviceData.count == 20)
            #expect(try crypto.decryptMetadata(early.aem, key: aemk, rpi: early.rpi) == metadata)
            seen.append(early.rpi)
        }
        #expect(seen == expected)
    }

    @Test func keyHistoryCoversTheRetentionWindowOverSimulatedWeeks() throws {
        let clock = SimulatedClock(midnight)
        let store = try openStore()
        let schedule = try KeySchedule(store: store, clock: clock)
        var keys = Set<TemporaryExposureKeyData>()
        for _ in 0..<(30 * 144) {
            let broadcast = try schedule.broadcast(metadata: metadata)
            #expect(broadcast.interval == ENIntervalNumber(unixSeconds: clock.now))
            keys.insert(try schedule.key().keyData)
            if clock.now % 86_400 == 3_600 { try store.applyRetention(.protocolDefault, now: clock.now) }
            clock.advance(by: 600)
        }
        #expect(keys.count == 30)
        keys.insert(try schedule.key().keyData)
        // Now: day 30, 00:00, and its key exists. The 14-day window starts at day 16, 00:00: days 16...30 remain.
        let history = try schedule.keyHistory()
        let days = history.map { (Int64($0.rollingStartIntervalNumber.rawValue) * 600 - midnight) / 86_400 }
        #expect(days == Array(16...30))
        #expect(Set(history.map(\.keyData)).count == history.count)
        #expect(try store.temporaryExposureKeys(validAfter: 0).count == 16, "day 15 is deleted at the next retention pass")
    }

    @Test func refusesATimeBeforeTheEpoch() throws {
        let schedule = try KeySchedule(store: try openStore(), clock: SimulatedClock(-5))
        #expect(throws: KeyScheduleError.self) { try schedule.key() }
    }
}
