import ENCore
import Foundation
@testable import ENStore
import Testing

/// Run once with ENAGENT_MAKE_V4_FIXTURE=path, with the GRDB store of release 0.x.
@Suite struct MakeV4Fixture {
    @Test func make() throws {
        guard let path = ProcessInfo.processInfo.environment["ENAGENT_MAKE_V4_FIXTURE"] else { return }
        let store = try AgentStore(path: path)
        let start = ENIntervalNumber(2_900_016)
        // Keys: two days, the first rolled once.
        let k1 = TemporaryExposureKey(keyData: Bytes16(high: 0x0101_0101_0101_0101, low: 1), rollingStartIntervalNumber: start, transmissionRiskLevel: 0)
        let k2 = TemporaryExposureKey(keyData: Bytes16(high: 0x0202_0202_0202_0202, low: 2), rollingStartIntervalNumber: start)
        let k3 = TemporaryExposureKey(keyData: Bytes16(high: 0x0303_0303_0303_0303, low: 3), rollingStartIntervalNumber: ENIntervalNumber(start.rawValue + 144))
        _ = try store.insertTemporaryExposureKeyIfAbsent(k1, createdAt: 1_740_009_600)
        _ = try store.rollTemporaryExposureKey(endingAfter: ENIntervalNumber(start.rawValue + 40), to: k2, createdAt: 1_740_033_600, limit: 2)
        _ = try store.insertTemporaryExposureKeyIfAbsent(k3, createdAt: 1_740_096_000)
        // Sightings: two adapters, one without RSSI.
        var sightings = [Sighting]()
        for i in 0..<300 {
            let seed = UInt64(i)
            sightings.append(Sighting(rpi: Bytes16(high: seed &* 0x9E37_79B9_7F4A_7C15, low: seed), aem: AssociatedEncryptedMetadata(rawValue: UInt32(i) &* 2_654_435_761),
                                      rssi: i % 50 == 0 ? nil : Int8(-30 - i % 70), time: 1_740_009_600 + Int64(i) * 60, adapter: i % 3 == 0 ? "hci1" : "hci0"))
        }
        try store.record(sightings)
        // A detection with a window, a failed one.
        let key = DiagnosisKey(key: TemporaryExposureKey(keyData: Bytes16(high: 0xAAAA, low: 0xBBBB), rollingStartIntervalNumber: start, transmissionRiskLevel: 4),
                               reportType: .confirmedTest, daysSinceOnsetOfSymptoms: 2)
        let window = ExposureWindow(date: 1_740_009_600, reportType: .confirmedTest, infectiousness: .high, calibrationConfidence: 2,
                                    scanInstances: [ScanInstance(minAttenuation: 55, typicalAttenuation: 60, secondsSinceLastScan: 120),
                                                    ScanInstance(minAttenuation: nil, typicalAttenuation: nil, secondsSinceLastScan: 300)],
                                    diagnosisKey: key)
        try store.recordDetection(startedAt: 1_740_100_000, finishedAt: 1_740_100_004,
                                  keyFiles: [ProcessedKeyFile(sha256: Array(repeating: 0x11, count: 32), name: "export-1.zip", region: "CH", keyCount: 140),
                                             ProcessedKeyFile(sha256: Array(repeating: 0x22, count: 32), name: "export-2.zip", region: nil, keyCount: 7)],
                                  matchedKeyCount: 1, windows: [window])
        try store.recordFailedDetection(startedAt: 1_740_110_000, error: "export-3.zip: the signature does not verify")
        // Settings and consent.
        try store.setSetting("paused-until", to: "1740200000")
        try store.setSetting("last-advertised-interval", to: "2900100")
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: 1_740_000_000))
        try store.recordConsent(ConsentEvent(granted: false, recordedAt: 1_740_050_000))
        try store.recordConsent(ConsentEvent(granted: true, recordedAt: 1_740_060_000))
        // Test results: one shared (keys, revision token), one waiting to upload, one refused for good.
        try store.recordTestResult(TestResult(id: "result-shared", testDate: 1_739_923_200, verificationMethod: "verification-code",
                                              verificationDetail: "confirmed test", recordedAt: 1_740_020_000, verificationToken: "token-1"))
        try store.queueUpload(testResultId: "result-shared", url: "http://127.0.0.1:8080/v1/publish", body: "{\"a\":1}", keys: [k1.keyData, k2.keyData], at: 1_740_020_010)
        try store.finishUpload(testResultId: "result-shared", .accepted(revisionToken: "rev-1"), at: 1_740_020_020)
        try store.recordTestResult(TestResult(id: "result-pending", testDate: 1_740_009_600, verificationMethod: "smart-health-card",
                                              verificationDetail: "issuer https://example.org", recordedAt: 1_740_030_000))
        try store.queueUpload(testResultId: "result-pending", url: "http://127.0.0.1:8080/v1/publish", body: "{\"b\":2}", keys: [k3.keyData], at: 1_740_030_010)
        try store.finishUpload(testResultId: "result-pending", .retry(reason: "HTTP 503", at: 1_740_031_000), at: 1_740_030_020)
        try store.recordTestResult(TestResult(id: "result-refused", testDate: 1_739_836_800, verificationMethod: "verification-code",
                                              verificationDetail: nil, recordedAt: 1_740_040_000))
        try store.queueUpload(testResultId: "result-refused", url: "http://127.0.0.1:8080/v1/publish", body: "{}", at: 1_740_040_010)
        try store.finishUpload(testResultId: "result-refused", .refused(reason: "HTTP 400: the certificate has expired"), at: 1_740_040_020)
        try store.close()
    }
}
