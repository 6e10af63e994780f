import ENAgent
import ENCore
import ENKeyFiles
import ENStore
import Foundation
import TestSupport
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
    func keyFile(_ keys: [DiagnosisKey], batch: UInt64) throws -> (name: String, data: Data) {
        let writer = KeyExportWriter(region: "US", startTimestamp: batch, endTimestamp: batch + 1,
                                     signer: (signer, SignatureInfo(keyId: "test", keyVersion: "1")))
        return ("batch \(batch)", try writer.zip(keys: keys))
    }

    @Test func aKeyPublishedAgainInALaterFileIsNotCountedTwice() throws {
        let exposed = try Broadcaster(reportType: .selfReport), other = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600, rssi: -60),
                          try exposed.sighting(at: exposed.start + 900, rssi: -55)])
        let first = try detection.detect(files: [try keyFile([exposed.key], batch: 1)], configurationJSON: "")
        #expect(first.matchedKeyCount == 1 && !first.newWindows.isEmpty)
        let stored = try store.exposureWindows()

        var confirmed = exposed.key
        confirmed.reportType = .confirmedTest
        let second = try detection.detect(files: [try keyFile([other.key, confirmed], batch: 2)], configurationJSON: "")
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

    @Test func aLaterRevocationRemovesWhatAnEarlierDetectionFound() throws {
        let exposed = try Broadcaster()
        try store.record([try exposed.sighting(at: exposed.start + 600)])
        _ = try detection.detect(files: [try keyFile([exposed.key], batch: 1)], configurationJSON: "")
        #expect(try !store.exposureWindows().isEmpty)
        var revoked = exposed.key
        revoked.reportType = .revoked
        let outcome = try detection.detect(files: [try keyFile([revoked], batch: 2)], configurationJSON: "")
        #expect(outcome.keyFilesProcessed == 1 && outcome.matchedKeyCount == 0)
        #expect(try store.exposureWindows().isEmpty)
    }
}
