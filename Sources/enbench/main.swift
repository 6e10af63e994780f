import ENCore
import ENStore
import Foundation

// enagent's benchmarks, run by `make bench` on a release build. Figures, not assertions:
// speed targets live here, never in timed unit tests.

func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func rate(_ count: Int, _ seconds: Double) -> String {
    String(format: "%12.0f", Double(count) / seconds)
}

// RPI derivation: per key, RPIK by HKDF and then the RPIs of all 144 intervals in one AES-ECB call.
let crypto = try ExposureCrypto()
let keys = try (0..<50_000).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
var checksum: UInt64 = 0
let deriveSeconds = try measure {
    for key in keys {
        let rpik = try crypto.rollingProximityIdentifierKey(for: key)
        try crypto.withRollingProximityIdentifiers(key: rpik, from: ENIntervalNumber(2_700_000), count: 144) { blocks in
            checksum ^= blocks.load(fromByteOffset: 143 * 16, as: UInt64.self)
        }
    }
}
let singleSeconds = try measure {
    for key in keys.prefix(20_000) {
        let rpik = try crypto.rollingProximityIdentifierKey(for: key)
        checksum ^= try crypto.rollingProximityIdentifier(key: rpik, interval: ENIntervalNumber(2_700_000)).low
    }
}
print("RPI derivation (one core, OpenSSL EVP)")
print("  keys/s, RPIK + 144 RPIs each:  \(rate(keys.count, deriveSeconds))")
print("  RPIs/s within those keys:      \(rate(keys.count * 144, deriveSeconds))")
print("  RPIs/s, RPIK + 1 RPI each:     \(rate(20_000, singleSeconds))")

// Sighting inserts: batches of 10,000 in one transaction each, into a fresh database file.
let directory = NSTemporaryDirectory() + "/enbench-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: directory) }
let store = try AgentStore(path: directory + "/enagent.db")
let batches = (0..<10).map { batch in
    (0..<10_000).map { index in
        Sighting(rpi: Bytes16(high: UInt64.random(in: .min ... .max), low: UInt64.random(in: .min ... .max)),
                 aem: AssociatedEncryptedMetadata(rawValue: UInt32(index)), rssi: -60,
                 time: 1_700_000_000 + Int64(batch * 10_000 + index), adapter: "hci0")
    }
}
let insertSeconds = try measure {
    for batch in batches { try store.record(batch) }
}
print("Sighting inserts (WAL, secure_delete, indexed by RPI and time)")
print("  sightings/s, batches of 10,000: \(rate(batches.count * 10_000, insertSeconds))  (\(try store.sightingCount()) stored)")
if checksum == 42 { print("") }  // keeps the derivations from being optimised away
