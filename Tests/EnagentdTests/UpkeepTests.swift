import ENAgent
import ENStore
@testable import enagentd
import ENSystemd
import TestSupport
import Testing

struct UpkeepTests {
    /// The day's key is made by the upkeep even when nothing asked for it, but not under a clock
    /// stepped back to a day before one that has a key: that key would never go on the air.
    @Test func makesTheDaysKeyButNoneForAnEarlierDay() throws {
        let directory = TemporaryDirectory()
        let store = try AgentStore(path: directory.file("enagent.db"))
        let clock = SimulatedClock(1_700_006_400 + 120)
        let upkeep = Upkeep(store: store, clock: clock, retention: .protocolDefault, synchronisation: nil, logger: Logger(label: "test"))
        try upkeep.run()
        let today = try store.temporaryExposureKeys(validAfter: 0)
        #expect(today.count == 1)

        clock.step(by: -86_400)
        try upkeep.run()
        #expect(try store.temporaryExposureKeys(validAfter: 0) == today, "no key for yesterday once today has one")

        clock.step(by: 2 * 86_400)
        try upkeep.run()
        #expect(try store.temporaryExposureKeys(validAfter: 0).count == 2, "tomorrow's key, once the clock reads tomorrow")
    }

    /// A suspend passes no timer: the upkeep after it is what tells the agent that the identifier on
    /// the air is hours old. Time passing awake, and a short nap, are not a resume.
    @Test func tellsAResumeFromTimePassing() throws {
        let directory = TemporaryDirectory()
        let store = try AgentStore(path: directory.file("enagent.db"))
        let clock = SimulatedClock(1_700_006_400 + 120)
        let upkeep = Upkeep(store: store, clock: clock, retention: .protocolDefault, synchronisation: nil, logger: Logger(label: "test"))
        #expect(try upkeep.run() == false, "the first run has nothing to compare with")
        clock.advance(by: 3_600)
        #expect(try upkeep.run() == false, "an hour awake")
        clock.sleep(for: ClockSteps.tolerance / 2)
        clock.advance(by: 60)
        #expect(try upkeep.run() == false, "a nap within the tolerance")
        clock.sleep(for: 8 * 3_600)
        clock.advance(by: 60)
        #expect(try upkeep.run(), "a night asleep")
        clock.advance(by: 60)
        #expect(try upkeep.run() == false, "the sleep counts once")
        #expect(try store.temporaryExposureKeys(validAfter: 0).count == 1, "the key of the day it woke in (the same day here)")
    }
}
