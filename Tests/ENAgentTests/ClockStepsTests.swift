import ENAgent
import ENCore
import ENStore
import TestSupport
import Testing

@Suite struct ClockStepsTests {
    @Test func driftWithinToleranceIsNoStep() {
        var steps = ClockSteps()
        #expect(steps.observe(wall: 1_000, steady: 0) == 0)
        #expect(steps.observe(wall: 1_060 + ClockSteps.tolerance, steady: 60) == 0)
        #expect(steps.forwardSteps == 0)
    }

    @Test func forwardStepsHoldRetentionBackAndStepsBackGiveItBack() {
        var steps = ClockSteps()
        let year: Int64 = 365 * 86_400
        _ = steps.observe(wall: 1_800_000_000, steady: 10)
        #expect(steps.observe(wall: 1_800_000_060 + year, steady: 70) == year)
        #expect(steps.retentionNow(wall: 1_800_000_060 + year) == 1_800_000_060)
        #expect(steps.observe(wall: 1_800_000_120, steady: 130) == -year, "NTP stepping it back")
        #expect(steps.forwardSteps == 0)
        #expect(steps.observe(wall: 1_800_000_180 - 86_400, steady: 190) == -86_400)
        #expect(steps.forwardSteps == 0, "a step back never lets retention run ahead")
    }

    /// What the hold protects: a year's step forward would otherwise delete every sighting.
    @Test func aYearsStepForwardDeletesNothingRecent() throws {
        let directory = TemporaryDirectory()
        let store = try AgentStore(path: directory.file("enagent.db"))
        let now: Int64 = 1_800_000_000
        try store.record([Sighting(rpi: Bytes16(high: 1, low: 2), aem: AssociatedEncryptedMetadata(rawValue: 3), rssi: -60, time: now, adapter: "hci0")])
        var steps = ClockSteps()
        _ = steps.observe(wall: now, steady: 0)
        let stepped = now + 365 * 86_400
        _ = steps.observe(wall: stepped, steady: 60)
        #expect(try store.applyRetention(.protocolDefault, now: steps.retentionNow(wall: stepped)).isEmpty)
        #expect(try store.applyRetention(.protocolDefault, now: stepped).sightings == 1, "the wall clock alone would have deleted it")
    }
}
