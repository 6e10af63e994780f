import ENAgent
import ENCore
import ENStore
import ENSystemd
import Foundation
import TestSupport
import Testing

@Suite struct AdvertiserStateTests {
    /// What the status shows for each advertiser's state, scan's state and store: the scan's
    /// refusal first, then an unwritable store, then what holds the advertisement back.
    @Test func theRadioStateDerivesFromTheAdvertiserTheScanAndTheStore() {
        let interval = ENIntervalNumber(2_834_000)
        let table: [(AdvertiserState, ScanState, storeFailing: Bool, RadioState)] = [
            (.idle, .refused(.noAdapter), true, RadioState()),
            (.onAir(interval: interval), .running, false, RadioState(advertising: true, scanning: true)),
            (.onAir(interval: interval), .running, true, RadioState(advertising: true, scanning: true, problem: .storeUnwritable)),
            (.onAir(interval: interval), .waitingForAdvertisement, false, RadioState(advertising: true)),
            (.waitingForInterval(resumesAt: 5), .running, false, RadioState(scanning: true, problem: .waitingForInterval, advertisingResumesAt: 5)),
            (.waitingForInterval(resumesAt: 5), .refused(.bluetoothOff), false, RadioState(problem: .bluetoothOff)),
            (.waitingForInterval(resumesAt: 5), .running, true, RadioState(scanning: true, problem: .storeUnwritable)),
            (.steppedAside(.adapterShared), .stopped, false, RadioState(problem: .adapterShared)),
            (.refused(.adapterConnectable), .waitingForAdvertisement, false, RadioState(problem: .adapterConnectable)),
            (.refused(.lastIntervalUnknown), .running, false, RadioState(scanning: true, problem: .lastIntervalUnknown)),
            (.refused(.storeUnwritable), .refused(.noAdapter), true, RadioState(problem: .noAdapter)),
            (.radioLost, .stopped, false, RadioState(problem: .bluetoothOff)),
            (.asleep, .stopped, false, RadioState()),
            (.retrying, .running, false, RadioState(scanning: true)),
        ]
        for (advertiser, scan, storeFailing, shown) in table {
            #expect(RadioState(advertiser: advertiser, scan: scan, storeFailing: storeFailing) == shown,
                    "\(advertiser), scan \(scan), store failing: \(storeFailing)")
        }
    }

    /// Each transition is one debug line; entering the state it is in changes and logs nothing.
    @Test func eachTransitionIsLoggedOnceAtDebugLevel() {
        let capture = LogCapture()
        let advertiser = Advertiser(logger: capture.logger())
        advertiser.enter(.waitingForInterval(resumesAt: 600), because: "the clock went back")
        advertiser.enter(.waitingForInterval(resumesAt: 600), because: "the minute's recheck")
        advertiser.enter(.onAir(interval: ENIntervalNumber(1)), because: "a new identifier")
        #expect(advertiser.state == .onAir(interval: ENIntervalNumber(1)))
        #expect(capture.records.map(\.level) == [.debug, .debug])
        #expect(capture.records.map(\.message) == ["advertiser: idle → waiting-for-interval(until 600) (the clock went back)",
                                                   "advertiser: waiting-for-interval(until 600) → on-air(interval 1) (a new identifier)"])
    }

    /// A running agent's transitions, each logged once: a start, a loss and the return, a stop.
    @Test func anAgentLogsItsAdvertisersTransitions() throws {
        let directory = TemporaryDirectory()
        let clock = SimulatedClock(1_700_006_400 + 120)
        let store = try AgentStore(path: directory.file("enagent.db"))
        let capture = LogCapture()
        let agent = RadioAgent(radio: RecordingRadio(), keys: try KeySchedule(store: store, clock: clock), store: store, clock: clock,
                               schedule: .standard, metadata: Metadata(transmitPower: -4), logger: capture.logger())
        agent.start()
        agent.radioLost()
        agent.radioReturned()
        Thread.sleep(forTimeInterval: 0.6)
        agent.stop()
        let interval = try #require(ENIntervalNumber(unixSeconds: clock.now))
        let transitions = capture.records.filter { $0.message.hasPrefix("advertiser: ") }
        #expect(transitions.allSatisfy { $0.level == .debug })
        #expect(transitions.map(\.message) == [
            "advertiser: idle → on-air(interval \(interval)) (a new identifier)",
            "advertiser: on-air(interval \(interval)) → radio-lost (the adapter went away or was switched off)",
            "advertiser: radio-lost → on-air(interval \(interval)) (a fresh key's identifier)",
            "advertiser: on-air(interval \(interval)) → idle (the agent stopped)",
        ])
    }
}
