import ENCore
import ENKeyFileWriter
import ENKeyFiles
import Foundation
import TestSupport
import Testing

@Suite struct ExposureDetectorTests {
    /// What a device near the owner of `key` recorded at `time`.
    func sighting(of key: DiagnosisKey, at time: Int64) throws -> Sighting {
        try Broadcaster(key: key, metadata: Metadata(transmitPower: -8)).sighting(at: time, rssi: -65)
    }

    func export(_ keys: [DiagnosisKey], revised: [DiagnosisKey] = []) throws -> KeyExport {
        let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1)
        var bin = writer.exportBin(keys: keys)
        // Revised keys are field 8: the same encoding as keys (field 7) under another tag.
        for key in revised {
            let single = writer.exportBin(keys: [key]).dropFirst(KeyExport.header.count)
            let keyField = single[single.firstIndex(of: 0x3a)!...]
            bin.append(0x42)
            bin.append(contentsOf: keyField.dropFirst())
        }
        return try KeyExport(exportBin: bin, signatureList: nil)
    }

    @Test func everyThreadCountFindsTheSameMatches() throws {
        let keys = try KeyExportWriterTests.randomKeys(5_000).map { key -> DiagnosisKey in
            var key = key
            key.reportType = .confirmedTest
            return key
        }
        let exposed = [keys[3], keys[2_222], keys[4_999]]
        var sightings = try exposed.map { try sighting(of: $0, at: $0.key.rollingStartIntervalNumber.unixSeconds + 60) }
        sightings += (0..<20_000).map { _ in Sighting(rpi: Bytes16(high: .random(in: 0 ... .max), low: .random(in: 0 ... .max)),
                                                   aem: AssociatedEncryptedMetadata(rawValue: 1), rssi: -50, time: 1, adapter: "hci1") }
        let index = SightingIndex(sightings)
        let files = [try export(Array(keys[..<2_500])), try export(Array(keys[2_500...]))]
        let single = try ExposureDetector(index: index, threads: 1).detect(files)
        let parallel = try ExposureDetector(index: index, threads: 3).detect(files)
        #expect(single.keysChecked == 5_000 && parallel.keysChecked == 5_000)
        #expect(Set(single.matches.map(\.key)) == Set(exposed))
        #expect(Set(parallel.matches) == Set(single.matches))
        #expect(single.matches.allSatisfy { $0.sightings.first?.attenuation == -8 - -65 })
    }

    /// A session's batches, appended in order, find what all their files at once would find.
    @Test func appendingLaterFilesEqualsMatchingAllAtOnce() throws {
        let keys = try KeyExportWriterTests.randomKeys(4)
        let index = SightingIndex(try keys.map { try sighting(of: $0, at: $0.key.rollingStartIntervalNumber.unixSeconds + 60) })
        var revoked = keys[0], revised = keys[1], revokedThenRevised = keys[2]
        revoked.reportType = .revoked
        revised.reportType = .selfReport
        revokedThenRevised.reportType = .revoked
        var restored = keys[2]
        restored.reportType = .confirmedTest
        let files = [try export(keys), try export([revoked, revised, revokedThenRevised]), try export([restored])]
        let detector = ExposureDetector(index: index, threads: 2)
        let atOnce = try detector.detect(files)
        var appended = DetectionResult()
        for file in files { appended.append(try detector.detect([file])) }
        #expect(Set(atOnce.matches.map(\.key)) == [revised, restored, keys[3]])
        #expect(Set(appended.matches.map(\.key)) == Set(atOnce.matches.map(\.key)))
        #expect(appended.revokedKeys == atOnce.revokedKeys && atOnce.revokedKeys == [keys[0].key.identity])
        #expect(appended.keysChecked == atOnce.keysChecked && atOnce.keysChecked == 8)
    }

    @Test func cancellingStopsTheWorkers() throws {
        let cancellation = CancellationFlag()
        cancellation.set()
        #expect(throws: CancellationError.self) {
            try ExposureDetector(index: SightingIndex([])).detect([try export(try KeyExportWriterTests.randomKeys(3))], cancellation: cancellation)
        }
    }

    @Test func revisionsApplyAndRevokedKeysDoNotCount() throws {
        var keys = try KeyExportWriterTests.randomKeys(3).map { key -> DiagnosisKey in
            var key = key
            key.reportType = .selfReport
            return key
        }
        let sightings = try keys.map { try sighting(of: $0, at: $0.key.rollingStartIntervalNumber.unixSeconds + 60) }
        var upgraded = keys[0], revoked = keys[1]
        upgraded.reportType = .confirmedTest
        revoked.reportType = .revoked
        keys[2].reportType = .revoked
        let result = try ExposureDetector(index: SightingIndex(sightings)).detect([try export(keys, revised: [upgraded, revoked])])
        #expect(result.matches.map(\.key) == [upgraded])
    }

    @Test func aKeyPublishedInTwoFilesCountsOnce() throws {
        let key = try KeyExportWriterTests.randomKeys(1)[0]
        let sightings = [try sighting(of: key, at: key.key.rollingStartIntervalNumber.unixSeconds)]
        let result = try ExposureDetector(index: SightingIndex(sightings)).detect([try export([key]), try export([key])])
        #expect(result.keysChecked == 2)
        #expect(result.matches.count == (key.reportType == .revoked ? 0 : 1))
    }

    /// Servers publish a key again (a re-upload, a later report type): the newest publication's
    /// metadata wins, in whichever order the files come, and the key's sightings count once.
    @Test func theNewestPublicationOfAKeyWins() throws {
        var selfReported = try KeyExportWriterTests.randomKeys(1)[0]
        selfReported.reportType = .selfReport
        var confirmed = selfReported
        confirmed.reportType = .confirmedTest
        let sightings = [try sighting(of: selfReported, at: selfReported.key.rollingStartIntervalNumber.unixSeconds + 60)]
        for threads in [1, 2] {
            let detector = ExposureDetector(index: SightingIndex(sightings), threads: threads)
            let upgraded = try detector.detect([try export([selfReported]), try export([confirmed])])
            #expect(upgraded.matches.map(\.key) == [confirmed] && upgraded.matches[0].sightings.count == 1 && upgraded.keysChecked == 2)
            let downgraded = try detector.detect([try export([confirmed]), try export([selfReported])])
            #expect(downgraded.matches.map(\.key) == [selfReported])
        }
    }

    /// A later file that revokes a key drops it, and says so (the store drops what earlier
    /// detections found); a key published again after its revocation counts again.
    @Test func aLaterRevocationDropsTheKeyAndIsReported() throws {
        let key = try KeyExportWriterTests.randomKeys(1).map { key -> DiagnosisKey in
            var key = key
            key.reportType = .confirmedTest
            return key
        }[0]
        var revoked = key
        revoked.reportType = .revoked
        let index = SightingIndex([try sighting(of: key, at: key.key.rollingStartIntervalNumber.unixSeconds + 60)])
        let dropped = try ExposureDetector(index: index).detect([try export([key]), try export([revoked])])
        #expect(dropped.matches.isEmpty && dropped.revokedKeys == [key.key.identity])
        let restored = try ExposureDetector(index: index).detect([try export([revoked]), try export([key])])
        #expect(restored.matches.map(\.key) == [key] && restored.revokedKeys.isEmpty)
    }
}
