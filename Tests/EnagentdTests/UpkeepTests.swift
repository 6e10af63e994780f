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
}
