import ENAgent
import ENAPI
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
@testable import enagentd
import Foundation
import TestSupport
import Testing

/// enagentd's detection on the scenarios Google's own matching code ran
/// (Tests/ENCoreTests/Fixtures/google-matching): each scenario's sightings and the scans that give
/// them their previous scans in a real database, its keys through a detection session
/// (StartDetection, AddKeyFiles, FinishDetection) with its configuration, and what the methods
/// then return, GetExposureWindows, GetDailySummaries and GetExposureInfo, compared field by
/// field with Google's results; the v1 summary from what the detection stored, with the
/// configuration GetExposureInfo takes.
@Suite struct GoogleMatchingDaemonTests {
    static let fixture = GoogleMatchingFixture.scenarios
    /// The scenarios a device's scan records can give (`deviceScans`).
    static let recordable = fixture.scenarios.filter { $0.deviceScans != nil }
    /// The families of replayed identifiers (a closure in `@Test(arguments:)` crashes Swift 6.0.3's compiler).
    static let replaying = fixture.scenarios.filter { ["replay", "rpi-window"].contains($0.family) }

    /// What the daemon cannot run: scenarios whose sightings' previous scans contradict each
    /// other, which no device's scan records give. enctl detect offline, which takes each
    /// sighting's previous scan as it comes, runs them (GoogleMatchingCommandTests).
    @Test func onlyScenariosNoDeviceCouldRecordAreLeftOut() {
        let left = Set(Self.fixture.scenarios.map(\.name)).subtracting(Self.recordable.map(\.name))
        if GoogleMatchingFixture.isCommitted {
            // Its first sighting, at 11:00:01, has no previous scan (Google counts 2 minutes, as
            // for a scan in the minute of 10:58), its second, at 11:01:00, one at 10:57:40; but
            // the second was heard in the first's scan or a later one, so the scan before its
            // own began in the minute of 10:58 or later.
            #expect(left == ["minute-arithmetic-1"])
        }
        #expect(left.count * 5 <= Self.fixture.scenarios.count, "the daemon runs most scenarios: \(left.sorted())")
    }

    @Test(arguments: GoogleMatchingDaemonTests.recordable)
    func theDaemonFindsWhatGooglesCodeFound(scenario: GoogleMatchingFixture.Scenario) throws {
        try DaemonRun(scenario).expectGooglesResults()
    }

    /// An identifier seen hours after its interval, or for longer than 20 minutes, counts as far
    /// as Google's code counts it (RollingProximityIdValidator, ExposureMatchingTracer
    /// .getValidSightingsForRpi), through the daemon's detection: the replay family's scenarios
    /// (an encounter, then the same RPI again 1 to 5 hours later) and the rpi-window family's
    /// (sightings at the edges of their RPI's window).
    @Test(arguments: GoogleMatchingDaemonTests.replaying)
    func replayedIdentifiersCountAsGooglesCodeCounts(scenario: GoogleMatchingFixture.Scenario) throws {
        let run = try DaemonRun(scenario)
        try run.expectGooglesResults()
        let (outside, longAfter) = Self.replays(in: scenario)
        let counted = try run.service.getExposureWindows(NoArguments()).windows.reduce(0) { $0 + $1.scanInstances.count }
        #expect(counted <= scenario.sightings.count - outside.count - longAfter.count, "neither kind of replay counts")
    }

    /// The replay family holds both kinds of replay, so that the test above sees them.
    @Test func theReplayFamilyReplaysBothWays() {
        let replays = Self.fixture.scenarios.filter { $0.family == "replay" }.map(Self.replays)
        #expect(replays.contains { $0.outside.contains { $0.time / 600 - $0.interval >= 13 } }, "an RPI seen over two hours after its interval")
        #expect(replays.contains { !$0.longAfter.isEmpty }, "an RPI seen for longer than 20 minutes")
        if GoogleMatchingFixture.isCommitted {
            #expect(replays.allSatisfy { !$0.outside.isEmpty && !$0.longAfter.isEmpty }, "each of the committed ones both")
        }
    }

    /// The scenario's sightings that Google's rules leave out: outside their RPI's window (12
    /// intervals before its own to 12 after), and more than 20 minutes after their RPI's first
    /// sighting inside it.
    static func replays(in scenario: GoogleMatchingFixture.Scenario) -> (outside: [GoogleMatchingFixture.Sighting], longAfter: [GoogleMatchingFixture.Sighting]) {
        let inWindow = { (sighting: GoogleMatchingFixture.Sighting) in ((sighting.interval - 12)..<(sighting.interval + 13)).contains(sighting.time / 600) }
        var first = [String: Int64]()
        for sighting in scenario.sightings where inWindow(sighting) {
            first[sighting.rpi] = min(first[sighting.rpi] ?? .max, sighting.time)
        }
        return (scenario.sightings.filter { !inWindow($0) }, scenario.sightings.filter { inWindow($0) && $0.time - first[$0.rpi]! > 1_200 })
    }
}

/// One scenario through the daemon: a store of its own, its sightings and scans recorded, its keys
/// detected in a session with its adapters' RSSI corrections, the service answering at the fixture's "now".
private struct DaemonRun {
    let scenario: GoogleMatchingFixture.Scenario
    let directory = TemporaryDirectory()
    let store: AgentStore
    let service: ExposureNotificationService
    let signer: P256PrivateKey
    let now = GoogleMatchingFixture.scenarios.now

    init(_ scenario: GoogleMatchingFixture.Scenario) throws {
        self.scenario = scenario
        store = try AgentStore(path: directory.file("enagent.db"))
        signer = try P256PrivateKey()
        service = try ServiceHandlerTests.service(store: store, trusting: signer, log: LogCapture(), clock: SimulatedClock(now),
                                                  rssiCorrections: try scenario.adapterRssiCorrections, idleLimit: .seconds(600)) { _ in }
        let scans = try #require(scenario.deviceScans)
        try store.record(try scenario.enagentSightings, scans: scans)
        try detect()
    }

    /// The scenario's keys, each in a signed file of its own, in two batches of one session.
    private func detect() throws {
        let keys = try scenario.diagnosisKeys
        let handle = try service.startDetection(DetectionSessionRequest(configuration: try scenario.configurationJSON, maxKeys: 0), caller: ":1.46")
        let half = (keys.count + 1) / 2
        for batch in [0..<half, half..<keys.count] where !batch.isEmpty {
            let files = try batch.map { try keyFile([keys[$0]], number: $0) }
            _ = try service.addKeyFiles(KeyFileBatch(session: handle.session, keyFiles: files), caller: ":1.46")
        }
        let summary = try service.finishDetection(handle, caller: ":1.46").summary
        #expect(summary.keyFilesProcessed == UInt32(keys.count) && summary.keysChecked == UInt64(keys.count))
    }

    private func keyFile(_ keys: [DiagnosisKey], number: Int) throws -> FileDescriptor {
        let writer = KeyExportWriter(region: "GO", startTimestamp: UInt64(number), endTimestamp: UInt64(number + 1),
                                     signer: (signer, SignatureInfo(keyId: "001", keyVersion: "v1")))
        let path = directory.file("keys-\(number).zip")
        try writer.zip(keys: keys).write(to: URL(fileURLWithPath: path))
        return FileDescriptor(open(path, O_RDONLY))
    }

    func expectGooglesResults() throws {
        // The store gave every sighting the previous scan Google's code was given, to the minute.
        let index = try store.sightingIndex()
        for sighting in scenario.sightings {
            let stored = index.sightings(of: try Bytes16(hex: sighting.rpi)).filter { $0.time == sighting.time && $0.rssi == sighting.rssi }
            #expect(!stored.isEmpty && stored.allSatisfy { $0.scanGap.seconds == ScanGap(time: sighting.time, previousScanTime: sighting.previousScanTime).seconds },
                    "the sighting at \(sighting.time): \(stored.map(\.scanGap.seconds)) s since the last scan")
        }

        typealias Window = GoogleMatchingFixture.Scenario.ComparableWindow
        let windows = try service.getExposureWindows(NoArguments()).windows.map { record in
            Window(tek: nil, date: Int64(record.date), reportType: try #require(ReportType(rawValue: Int(record.reportType))),
                   infectiousness: try #require(Infectiousness(rawValue: Int(record.infectiousness))),
                   calibrationConfidence: Int(record.calibrationConfidence), scans: record.scanInstances)
        }.sorted()
        #expect(windows == scenario.expectedWindows(withKeys: false))
        #expect(try store.exposureWindows().map { Window($0) }.sorted() == scenario.expectedWindows(), "each window with its key")

        scenario.expectDailySummaries(try service.getDailySummaries(ConfigurationArgument(configuration: try scenario.configurationJSON)).summaries)

        let infos = try service.getExposureInfo(NoArguments()).exposures
        #expect(infos == scenario.expectedExposureInfos(now: now), "in Google's order")
        // The daemon has no method for the v1 summary: it is what GetExposureInfo's configuration
        // (the last detection's) makes of what the detection stored.
        let v1 = try #require(try ExposureDetection.configuration(try scenario.configurationJSON).v1)
        #expect(GoogleMatchingFixture.Scenario.V1SummaryFields(v1.summary(of: try store.v1Matches(), now: now)) == scenario.expectedV1Summary(now: now))
    }
}
