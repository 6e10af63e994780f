import ENCore
import ENKeyFiles
import ENStore
import Foundation

// enagent's benchmarks, run by `make bench` on a release build. Figures, not assertions:
// speed targets live here, never in timed unit tests.
//
//   enbench               all benchmarks
//   enbench detect DIR    only the detection measurement, on data an earlier run left in DIR
//                         (run as a child process so its peak memory is detection's alone)

func measure<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let result = try body()
    let elapsed = ContinuousClock.now - start
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%12.0f", Double(count) / seconds) }

/// The peak resident memory of this address space (VmHWM). getrusage's ru_maxrss would carry
/// the parent's peak across the spawn, so it is not used.
func peakMemoryMB() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? .nan
}

let diagnosisKeyCount = 1_000_000
let sightingCount = 100_000
let exposedKeyCount = 100

func benchmarkDerivation() throws {
    let crypto = try ExposureCrypto()
    let keys = try (0..<50_000).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
    var checksum: UInt64 = 0
    let (_, seconds) = try measure {
        for key in keys {
            let rpik = crypto.rollingProximityIdentifierKey(for: key)
            try crypto.withRollingProximityIdentifiers(key: rpik, from: ENIntervalNumber(2_700_000), count: 144) { blocks in
                checksum ^= blocks.load(fromByteOffset: 143 * 16, as: UInt64.self)
            }
        }
    }
    let (_, singleSeconds) = try measure {
        for key in keys.prefix(20_000) {
            let rpik = crypto.rollingProximityIdentifierKey(for: key)
            checksum ^= try crypto.rollingProximityIdentifier(key: rpik, interval: ENIntervalNumber(2_700_000)).low
        }
    }
    print("RPI derivation (one core; HKDF on SHA256_Transform, AES-ECB through EVP)")
    print("  keys/s, RPIK + 144 RPIs each:   \(rate(keys.count, seconds))")
    print("  RPIs/s within those keys:       \(rate(keys.count * 144, seconds))")
    print("  RPIs/s, RPIK + 1 RPI each:      \(rate(20_000, singleSeconds))\(checksum == 42 ? " " : "")")
}

func benchmarkInserts(in directory: String) throws {
    let store = try AgentStore(path: directory + "/inserts.db")
    let batches = (0..<10).map { batch in
        (0..<10_000).map { index in
            Sighting(rpi: Bytes16(high: .random(in: .min ... .max), low: .random(in: .min ... .max)),
                     aem: AssociatedEncryptedMetadata(rawValue: UInt32(index)), rssi: -60,
                     time: 1_700_000_000 + Int64(batch * 10_000 + index), adapter: "hci0")
        }
    }
    let (_, seconds) = try measure { for batch in batches { try store.record(batch) } }
    print("Sighting inserts (WAL, secure_delete, indexed by RPI and time)")
    print("  sightings/s, batches of 10,000: \(rate(batches.count * 10_000, seconds))  (\(try store.sightingCount()) stored)")
}

/// One signed export of a million keys over 14 days, and an agent database with 100,000
/// sightings of which `exposedKeyCount` keys' RPIs are a part.
func writeDetectionData(in directory: String) throws -> P256PrivateKey {
    let crypto = try ExposureCrypto()
    let firstDay: UInt32 = 2_700_000 - 2_700_000 % 144
    let keys = try (0..<diagnosisKeyCount).map { index in
        DiagnosisKey(key: TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(),
                                               rollingStartIntervalNumber: ENIntervalNumber(firstDay + UInt32(index % 14) * 144)))
    }
    let signer = try P256PrivateKey()
    let writer = KeyExportWriter(region: "US", startTimestamp: 0, endTimestamp: 1, signer: (signer, SignatureInfo(keyId: "bench", keyVersion: "1")))
    try writer.zip(keys: keys).write(to: URL(fileURLWithPath: directory + "/export.zip"))
    var sightings = [Sighting]()
    for key in keys.prefix(exposedKeyCount) {
        let rpis = try crypto.rollingProximityIdentifiers(key: crypto.rollingProximityIdentifierKey(for: key.key.keyData),
                                                          from: key.key.rollingStartIntervalNumber, count: 144)
        let aemk = crypto.associatedEncryptedMetadataKey(for: key.key.keyData)
        for interval in 10..<20 {
            let aem = try crypto.encryptMetadata(Metadata(transmitPower: -5), key: aemk, rpi: rpis[interval])
            sightings.append(Sighting(rpi: rpis[interval], aem: aem, rssi: -70,
                                      time: key.key.rollingStartIntervalNumber.unixSeconds + Int64(interval) * 600, adapter: "hci0"))
        }
    }
    while sightings.count < sightingCount {
        sightings.append(Sighting(rpi: Bytes16(high: .random(in: .min ... .max), low: .random(in: .min ... .max)),
                                  aem: AssociatedEncryptedMetadata(rawValue: 1), rssi: -80,
                                  time: Int64(firstDay) * 600 + .random(in: 0..<14 * 86_400), adapter: "hci0"))
    }
    try AgentStore(path: directory + "/sightings.db").record(sightings)
    return signer
}

func benchmarkDetection(in directory: String, publicKeyPEM: String) throws {
    let (export, readSeconds) = try measure {
        try KeyExport(contentsOf: try Data(contentsOf: URL(fileURLWithPath: directory + "/export.zip")))
    }
    let trusted = [TrustedKey(publicKey: try P256PublicKey(pem: publicKeyPEM))]
    let (status, verifySeconds) = measure { export.signatureStatus(trustedKeys: trusted) }
    let (index, indexSeconds) = try measure { SightingIndex(try AgentStore(path: directory + "/sightings.db").sightings()) }
    let cores = ProcessInfo.processInfo.activeProcessorCount
    print("Exposure detection: \(export.keyCount) keys in one export against \(index.sightings.count) sightings")
    print(String(format: "  read + check export.zip: %.2f s; signature %@ in %.3f s; sighting index from SQLite: %.2f s",
                 readSeconds, status.rawValue, verifySeconds, indexSeconds))
    for threads in Set([1, cores]).sorted() {
        let (result, seconds) = try measure { try ExposureDetector(index: index, threads: threads).detect([export]) }
        let label = threads == 1 ? "one core" : "\(threads) cores"
        print("  keys/s, \(label):".padding(toLength: 33, withPad: " ", startingAt: 0)
              + "\(rate(result.keysChecked, seconds))  (\(result.matches.count) keys matched, expected \(exposedKeyCount))")
    }
    print(String(format: "  peak memory (this process): %.0f MB", peakMemoryMB()))
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "detect" {
    try benchmarkDetection(in: arguments[2], publicKeyPEM: try String(contentsOfFile: arguments[3], encoding: .utf8))
} else {
    let directory = NSTemporaryDirectory() + "/enbench-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try benchmarkDerivation()
    try benchmarkInserts(in: directory)
    let signer = try writeDetectionData(in: directory)
    try signer.publicKey.pem.write(toFile: directory + "/public.pem", atomically: true, encoding: .utf8)
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    child.arguments = ["detect", directory, directory + "/public.pem"]
    try child.run()
    child.waitUntilExit()
    if child.terminationStatus != 0 { exit(child.terminationStatus) }
}
