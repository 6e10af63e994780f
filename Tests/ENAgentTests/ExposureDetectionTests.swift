import ENAgent
import ENCore
import ENKeyFileWriter
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
import Synchronization
import Testing

/// Detection inside the agent, across runs: what one detection stored, a later one with another
/// file publishing the same key must not count again.
@Suite struct ExposureDetectionTests {
    let directory = TemporaryDirectory()
    let signer: P256PrivateKey
    let store: AgentStore
    let detection: ExposureDetection

    init() throws {
        signer = try P256PrivateKey()
        store = try AgentStore(path: directory.file("enagent.db"))
        detection = ExposureDetection(store: store, clock: SimulatedClock(1_700_000_000),
                                      trustedKeys: [TrustedKey(publicKey: signer.publicKey)])
    }

    /// A signed key file; `batch` makes files with the same keys differ (as a server's daily files do).
    func keyFile(_ keys: [DiagnosisKey], batch: UInt64) throws -> KeyFileSource {
        let writer = KeyExportWriter(region: "US", startTimestamp: batch, endTimestamp: batch + 1,
                                     signer: (signer, SignatureInfo(keyId: "test", keyVersion: "1")))
        return KeyFileSource(name: "batch \(batch)", data: try writer.zip(keys: keys))
    }

    /// One detection with all its files: a session given one batch.
    func detect(files: [KeyFileSource]) throws -> DetectionOutcome {
        var session = try DetectionSession(detection: detection, configurationJSON: "")
        try session.add(files)
        return try session.finish()
    }

    @Test func aKeyPublishedAgainInALaterFileIsNotCountedTwice() throws {
        let exposed = try Broadcaster(reportType: .selfReport), other = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60),
                          try exposed.sighting(at: exposed.start + 900, rssi: -55)])
        let first = try detect(files: [try keyFile([exposed.key], batch: 1)])
        #expect(first.matchedKeyCount == 1 && !first.newWindows.isEmpty)
        let stored = try store.exposureWindows()

        var confirmed = exposed.key
        confirmed.reportType = .confirmedTest
        let second = try detect(files: [try keyFile([other.key, confirmed], batch: 2)])
        #expect(second.keyFilesProcessed == 1 && second.matchedKeyCount == 1)
        let windows = try store.exposureWindows()
        #expect(windows.count == stored.count, "the key's windows are replaced, not added")
        #expect(windows.allSatisfy { $0.diagnosisKey == confirmed }, "the newest publication's report type")
        let now = exposed.start + 86_400
        let before = ExposureConfigurationV2().dailySummaries(of: stored, now: now)
        let after = ExposureConfigurationV2().dailySummaries(of: windows, now: now)
        #expect(after.map(\.weightedDurationSum) == before.map(\.weightedDurationSum))
        #expect(after.count == 1 && after[0].scoreSum > 0)
    }

    /// What v1 needs of each matched key (the strongest sighting of each scan with an RSSI) is
    /// kept whatever the detection's configuration says of v1: GetExposureInfo scores the keys of
    /// every detection with the last one's configuration.
    @Test func whatV1NeedsIsKeptForEveryMatchedKey() throws {
        let exposed = try Broadcaster(), other = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60), try exposed.sighting(at: exposed.start + 610, rssi: -50),
                          try exposed.sighting(at: exposed.start + 900, rssi: nil), try other.sighting(at: other.start + 1_200, rssi: -70)])
        _ = try detect(files: [try keyFile([exposed.key], batch: 1)])
        #expect(try store.v1Matches() == [V1Match(key: exposed.key, sightings: [V1Sighting(time: exposed.start + 610, attenuation: 40)])],
                "one scan's strongest; none without an RSSI")
        var session = try DetectionSession(detection: detection, configurationJSON: #"{"minimumRiskScore":1}"#)
        try session.add([try keyFile([other.key], batch: 2)])
        _ = try session.finish()
        #expect(try store.v1Matches().map(\.key) == [exposed.key, other.key])
    }

    /// A key published without a report type has the configuration's (reportTypeNoneMap) in its
    /// stored windows, as in those the detection returns (Google's ExposureWindowUtils.getReportType).
    @Test func aKeyWithoutAReportTypeIsStoredWithTheConfigurationsType() throws {
        let exposed = try Broadcaster(reportType: .unknown)
        try store.record([try exposed.sighting(at: exposed.start + 600)])
        var session = try DetectionSession(detection: detection, configurationJSON: #"{"reportTypeNoneMap":3}"#)
        try session.add([try keyFile([exposed.key], batch: 1)])
        #expect(try session.finish().newWindows.map(\.reportType) == [.selfReport])
        #expect(try store.exposureWindows().map(\.reportType) == [.selfReport])
    }

    @Test func aLaterRevocationRemovesWhatAnEarlierDetectionFound() throws {
        let exposed = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600)])
        _ = try detect(files: [try keyFile([exposed.key], batch: 1)])
        #expect(try !store.exposureWindows().isEmpty)
        var revoked = exposed.key
        revoked.reportType = .revoked
        let outcome = try detect(files: [try keyFile([revoked], batch: 2)])
        #expect(outcome.keyFilesProcessed == 1 && outcome.matchedKeyCount == 0)
        #expect(try store.exposureWindows().isEmpty)
    }

    // MARK: Sessions

    @Test func aSessionCountsAKeyOnceAcrossBatchesAndStoresOneDetection() throws {
        let exposed = try Broadcaster(), other = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60), try other.sighting(at: other.start + 1_200, rssi: -60)])
        var session = try DetectionSession(detection: detection, configurationJSON: "")
        let first = try keyFile([exposed.key], batch: 1)
        try session.add([first])
        var revised = exposed.key
        revised.reportType = .selfReport
        try session.add([try keyFile([revised, other.key], batch: 2), first])
        #expect(session.filesReceived == 3 && session.keyFilesProcessed == 2 && session.keyFilesSkipped == 1, "the same file twice is skipped")
        #expect(session.keysChecked == 3 && session.matchedKeyCount == 2, "the key published twice is one match")
        #expect(try store.lastDetection() == nil, "nothing is stored before the session finishes")
        let outcome = try session.finish()
        let windows = try store.exposureWindows()
        #expect(outcome.matchedKeyCount == 2 && windows.count == outcome.newWindows.count)
        #expect(windows.filter { $0.diagnosisKey.key.identity == exposed.key.key.identity }.allSatisfy { $0.diagnosisKey == revised },
                "the later batch's revision wins")
        let last = try store.lastDetection()
        #expect(last?.keyFileCount == 2 && last?.error == nil)
    }

    @Test func aLaterBatchRevokesWhatAnEarlierOneMatched() throws {
        let exposed = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600)])
        var session = try DetectionSession(detection: detection, configurationJSON: "")
        try session.add([try keyFile([exposed.key], batch: 1)])
        #expect(session.matchedKeyCount == 1)
        var revoked = exposed.key
        revoked.reportType = .revoked
        try session.add([try keyFile([revoked], batch: 2)])
        #expect(session.matchedKeyCount == 0)
        #expect(try session.finish().newWindows.isEmpty && store.exposureWindows().isEmpty)
    }

    @Test func aRefusedBatchLeavesTheSessionAsItWas() throws {
        let exposed = try Broadcaster(), later = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600), try later.sighting(at: later.start + 600)])
        var session = try DetectionSession(detection: detection, configurationJSON: "", maximumKeys: 3)
        try session.add([try keyFile([exposed.key], batch: 1)])
        let stranger = KeyExportWriter(region: "US", startTimestamp: 9, endTimestamp: 10, signer: (try P256PrivateKey(), SignatureInfo(keyId: "x", keyVersion: "1")))
        let forged = KeyFileSource(name: "forged", data: try stranger.zip(keys: [later.key]))
        expectError({ try session.add([try keyFile([later.key], batch: 2), forged]) }) { error in
            if case .unverified(name: "forged", _)? = error as? DetectionError { return true }
            return false
        }
        #expect(try store.lastDetection()?.error?.contains("forged") == true, "a refused batch is the last detection's error")
        #expect(throws: DetectionError.keyLimit(maximum: 3, checked: 1, batch: 3)) {
            try session.add([try keyFile([later.key, try Broadcaster().key, try Broadcaster().key], batch: 3)])
        }
        #expect(session.filesReceived == 1 && session.keysChecked == 1 && session.matchedKeyCount == 1)
        try session.add([try keyFile([later.key], batch: 2)])
        let outcome = try session.finish()
        #expect(outcome.keyFilesProcessed == 2 && outcome.keysChecked == 2 && outcome.matchedKeyCount == 2, "the batch refused before is new now")
        #expect(try store.lastDetection()?.error == nil)
    }

    @Test func aCancelledBatchIsNeitherUsedNorAFailure() throws {
        let exposed = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600)])
        var session = try DetectionSession(detection: detection, configurationJSON: "")
        let cancellation = CancellationFlag()
        cancellation.set()
        #expect(throws: DetectionError.cancelled) { try session.add([try keyFile([exposed.key], batch: 1)], cancellation: cancellation) }
        #expect(session.keysChecked == 0 && session.filesReceived == 0)
        #expect(try store.lastDetection() == nil, "cancelling is the client's choice, not a failure")
    }

    /// The agent's detection gives each stored sighting the correction of the adapter that
    /// recorded it: one phone heard at the same RSSI by two adapters, and by one of unknown address.
    @Test func eachStoredSightingGetsItsAdaptersCorrection() throws {
        let dongle = try #require(BluetoothAddress("00:1A:7D:DA:71:13")), builtIn = try #require(BluetoothAddress("B8:27:EB:00:00:01"))
        let calibrated = ExposureDetection(store: store, clock: detection.clock, trustedKeys: detection.trustedKeys,
                                           rssiCorrections: RssiCorrections(defaultCorrection: 2, byAdapter: [dongle: 5, builtIn: -8]))
        let exposed = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60, adapterAddress: dongle),
                          try exposed.sighting(at: exposed.start + 660, rssi: -60, adapterAddress: builtIn),
                          try exposed.sighting(at: exposed.start + 720, rssi: -60)])
        var session = try DetectionSession(detection: calibrated, configurationJSON: "")
        try session.add([try keyFile([exposed.key], batch: 1)])
        let windows = try session.finish().newWindows
        // TX power -10: -10 - (-60 + 5) = 45, -10 - (-60 - 8) = 58, and the default -10 - (-60 + 2) = 48.
        #expect(windows.flatMap(\.scanInstances).map(\.minAttenuation) == [45, 58, 48])
    }

    @Test func progressCountsTheSessionsKeys() throws {
        var session = try DetectionSession(detection: detection, configurationJSON: "")
        try session.add([try keyFile(try (0..<3).map { _ in try Broadcaster().key }, batch: 1)])
        let seen = Mutex([Int]())
        try session.add([try keyFile(try (0..<2).map { _ in try Broadcaster().key }, batch: 2)], progress: { count in seen.withLock { $0.append(count) } })
        #expect(seen.withLock { $0 } == [5], "keys checked by the session so far, the earlier batch's included")
    }
}
