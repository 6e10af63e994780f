import ENAgent
import ENCore
import ENStore
import ENSystemd
import Foundation
import TestSupport
import Testing

@Suite struct AdvertiserStateTests {
    /// What the status shows for each of the radio's activities, advertiser's state, scan's state
    /// and store: advertising and scanning only where the agent wants them and the radio does them;
    /// the scan's refusal first, then an unwritable store, then the agent's reason to hold the
    /// advertisement back, then the radio's reason for having none, where the agent wants one.
    @Test func theRadioStateDerivesFromTheRadiosActivityTheAdvertiserTheScanAndTheStore() {
        let interval = ENIntervalNumber(2_834_000)
        let hci0 = AdapterIdentity(name: "hci0")
        let both = RadioActivity(advertisement: .onAir, scan: .running, adapter: hci0)
        let scanning = RadioActivity(scan: .running, adapter: hci0)
        let table: [(RadioActivity, AdvertiserState, ScanState, storeFailing: Bool, RadioState)] = [
            (RadioActivity(advertisement: .onAir, scan: .running, scanProblem: .noAdapter, adapter: hci0), .idle, .refused, true, RadioState()),
            (both, .onAir(interval: interval), .started, false, RadioState(advertising: true, scanning: true, adapter: hci0)),
            (both, .onAir(interval: interval), .started, true, RadioState(advertising: true, scanning: true, problem: .storeUnwritable, adapter: hci0)),
            (RadioActivity(advertisement: .onAir, scan: .waitingForAdvertisement), .onAir(interval: interval), .started, false, RadioState(advertising: true)),
            (RadioActivity(advertisement: .onAir, scan: .starting), .onAir(interval: interval), .started, false, RadioState(advertising: true)),
            (RadioActivity(advertisement: .onAir, scan: .paused), .onAir(interval: interval), .started, false, RadioState(advertising: true)),
            (RadioActivity(advertisement: .adding, scan: .running), .onAir(interval: interval), .started, false, RadioState(scanning: true)),
            (RadioActivity(advertisement: .unfit, advertisingProblem: .adapterConnectable), .onAir(interval: interval), .stopped, false,
             RadioState(problem: .adapterConnectable)),
            (both, .onAir(interval: interval), .stopped, false, RadioState(advertising: true, adapter: hci0)),
            (scanning, .waitingForInterval(resumesAt: 5), .started, false, RadioState(scanning: true, problem: .waitingForInterval, advertisingResumesAt: 5, adapter: hci0)),
            (RadioActivity(scanProblem: .bluetoothOff), .waitingForInterval(resumesAt: 5), .refused, false, RadioState(problem: .bluetoothOff)),
            (scanning, .waitingForInterval(resumesAt: 5), .started, true, RadioState(scanning: true, problem: .storeUnwritable, adapter: hci0)),
            (RadioActivity(advertisingProblem: .adapterConnectable, scan: .running), .waitingForInterval(resumesAt: 5), .started, false,
             RadioState(scanning: true, problem: .waitingForInterval, advertisingResumesAt: 5)),
            (RadioActivity(advertisingProblem: .adapterShared), .offAir, .stopped, false, RadioState(problem: .adapterShared)),
            (RadioActivity(advertisingProblem: .adapterConnectable, scan: .waitingForAdvertisement), .offAir, .started, false,
             RadioState(problem: .adapterConnectable)),
            (RadioActivity(advertisingProblem: .bluetoothOff, scan: .running), .storeRefused(.lastIntervalUnknown), .started, false,
             RadioState(scanning: true, problem: .lastIntervalUnknown)),
            (RadioActivity(advertisingProblem: .bluetoothOff, scanProblem: .noAdapter), .storeRefused(.storeUnwritable), .refused, true,
             RadioState(problem: .noAdapter)),
            (RadioActivity(advertisingProblem: .bluetoothOff), .offAir, .stopped, false, RadioState(problem: .bluetoothOff)),
            (RadioActivity(advertisingProblem: .bluetoothOff), .asleep, .stopped, false, RadioState()),
            (scanning, .offAir, .started, false, RadioState(scanning: true, adapter: hci0)),
        ]
        for (activity, advertiser, scan, storeFailing, shown) in table {
            #expect(RadioState(activity: activity, advertiser: advertiser, scan: scan, storeFailing: storeFailing) == shown,
                    "\(activity), \(advertiser), scan \(scan), store failing: \(storeFailing)")
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
            "advertiser: on-air(interval \(interval)) → off-air (the adapter went away or was switched off)",
            "advertiser: off-air → on-air(interval \(interval)) (a fresh key's identifier)",
            "advertiser: on-air(interval \(interval)) → idle (the agent stopped)",
        ])
    }
}
