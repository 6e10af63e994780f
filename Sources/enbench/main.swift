import ENCore
import ENKeyFiles
import ENStore
import Foundation

// enagent's benchmarks, run by `make bench` on release builds. Figures and ratios against a
// baseline measured in the same run, never assertions: speed targets live here, not in timed
// unit tests.
//
//   enbench CEILING [DIR]   CEILING: bench/derivation-ceiling.c built (the C/OpenSSL baseline);
//                           enctl and enagentd are taken from beside enbench

func measure<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let result = try body()
    return (result, (ContinuousClock.now - start).seconds)
}

/// Each line written at once (Swift's print buffers when the output is a file, and a failure
/// would lose the figures before it).
func print(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func rate(_ count: Int, _ seconds: Double) -> String { String(format: "%12.0f", Double(count) / seconds) }

let cores = ProcessInfo.processInfo.activeProcessorCount
let exposedKeyCount = 100

/// The C baseline's and enagent's single-core derivation (RPIK and 144 RPIs per key) of the same
/// keys; checks that both derive the same RPIs. Returns the baseline's keys/s: the ceiling.
func benchmarkDerivation(ceiling: String, in directory: String) throws -> Double {
    let keys = try (0..<200_000).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
    let keyFile = directory + "/keys.bin"
    try Data(keys.flatMap(\.bytes)).write(to: URL(fileURLWithPath: keyFile))
    // The best of three: a ceiling, not an average.
    var best = 0.0, baselineChecksum = ""
    for _ in 0..<3 {
        let run = try ChildRun.run(ceiling, [keyFile])
        let fields = run.standardOutput.split(separator: " ")
        guard run.status == 0, fields.count == 2, let keysPerSecond = Double(fields[0]) else {
            throw BenchError("\(ceiling) failed: \(run.standardOutput)")
        }
        best = max(best, keysPerSecond)
        baselineChecksum = fields[1].trimmingCharacters(in: .whitespacesAndNewlines)
    }
    let crypto = try ExposureCrypto()
    var checksum: (UInt64, UInt64) = (0, 0)
    let (_, seconds) = try measure {
        for key in keys {
            try crypto.withRollingProximityIdentifiers(key: crypto.rollingProximityIdentifierKey(for: key),
                                                      from: ENIntervalNumber(2_700_000), count: 144) { blocks in
                for interval in 0..<144 {
                    checksum.0 ^= blocks.loadUnaligned(fromByteOffset: interval * 16, as: UInt64.self)
                    checksum.1 ^= blocks.loadUnaligned(fromByteOffset: interval * 16 + 8, as: UInt64.self)
                }
            }
        }
    }
    let ours = withUnsafeBytes(of: &checksum) { $0.hexString }
    guard ours == baselineChecksum else { throw BenchError("the C baseline derived other RPIs (\(baselineChecksum), enagent \(ours))") }
    print("RPI derivation, one core: RPIK (HKDF-SHA256) and 144 RPIs (AES-128-ECB) per key, \(keys.count) keys")
    print("  keys/s, C with OpenSSL (the ceiling): \(rate(1, 1 / best))")
    print("  keys/s, enagent (ENCore):             \(rate(keys.count, seconds))  (\(String(format: "%.2f", Double(keys.count) / seconds / best))× the ceiling; the same RPIs)")
    return best
}

/// The C baseline's derivation with every RPI looked up among sightings, on one core and before
/// any file is read: what a whole detection could reach per core at most, so `cores` times that
/// is its limit here. Looked up among all the sightings, and among those a key of one day can
/// match (its day ±2 h, protocol.md §3), as an index split by day would do. Returns the highest
/// of the limits, as a multiple of the ceiling.
func benchmarkDerivationFloor(ceiling: String, best: Double, data: DetectionData, in directory: String) throws -> Double {
    let text = try Data(contentsOf: URL(fileURLWithPath: data.jsonLines))
    let sightings = try text.withUnsafeBytes { bytes in
        try bytes.split(separator: 0x0A).compactMap { line in try Sighting.jsonLine(UnsafeRawBufferPointer(rebasing: line), place: "bench") }
    }
    let times = sightings.map(\.time)
    let dayStart = (times.min()! + times.max()!) / 2 / 86_400 * 86_400
    let oneDay = dayStart - KeyMatcher.validityTolerance..<dayStart + 86_400 + KeyMatcher.validityTolerance
    let daysSightings = sightings.filter { oneDay.contains($0.time) }
    func randomRPIs(_ count: Int) -> [RollingProximityIdentifier] {
        (0..<count).map { _ in Bytes16(high: .random(in: .min ... .max), low: .random(in: .min ... .max)) }
    }
    // One RPI of each of the first keys joins every set: the baseline must find each.
    let crypto = try ExposureCrypto()
    let keys = try Data(contentsOf: URL(fileURLWithPath: directory + "/keys.bin")).prefix(8 * 16)
    let markers = try stride(from: 0, to: keys.count, by: 16).map { offset in
        try crypto.rollingProximityIdentifier(key: crypto.rollingProximityIdentifierKey(for: Bytes16(bytes: keys.dropFirst(offset).prefix(16))!),
                                              interval: ENIntervalNumber(2_700_000 + UInt32(offset / 16)))
    }
    // The database's sightings are random RPIs spread over the same days as the JSON Lines.
    let databaseDayShare = data.databaseSightingCount * daysSightings.count / sightings.count
    let sets: [(label: String, rpis: [RollingProximityIdentifier])] = [
        ("among the JSON Lines sightings", sightings.map(\.rpi)),
        ("among those of one day ±2 h", daysSightings.map(\.rpi)),
        ("among the database's sightings", randomRPIs(data.databaseSightingCount)),
        ("among those of one day ±2 h", randomRPIs(databaseDayShare)),
    ]
    print("RPI derivation and lookup, one core, C with OpenSSL (no file read): keys/s, × the ceiling, \(cores) cores at most")
    var limit = 0.0
    for set in sets {
        let file = directory + "/rpis.bin"
        var bytes = Data(capacity: set.rpis.count * 16)
        for rpi in set.rpis + markers { rpi.withUnsafeBytes { bytes.append(contentsOf: $0) } }
        try bytes.write(to: URL(fileURLWithPath: file))
        var fastest = 0.0
        for _ in 0..<3 {
            let run = try ChildRun.run(ceiling, [directory + "/keys.bin", file])
            let fields = run.standardOutput.split(separator: " ")
            guard run.status == 0, fields.count == 2, let keysPerSecond = Double(fields[0]) else {
                throw BenchError("\(ceiling) failed: \(run.standardOutput)")
            }
            guard Int(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) == markers.count else {
                throw BenchError("\(ceiling) found \(fields[1]) RPIs of its keys among the sightings, not \(markers.count)")
            }
            fastest = max(fastest, keysPerSecond)
        }
        print("  " + "\(set.label) (\(set.rpis.count))".padding(toLength: 46, withPad: " ", startingAt: 0)
              + String(format: "%10.0f %6.2f× %6.2f×", fastest, fastest / best, Double(cores) * fastest / best))
        try FileManager.default.removeItem(atPath: file)
        limit = max(limit, Double(cores) * fastest / best)
    }
    return limit
}

func benchmarkInserts(in directory: String) throws {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory + "/inserts.db" + suffix) }
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
    print("  sightings/s, batches of 10,000:      \(rate(batches.count * 10_000, seconds))  (\(try store.sightingCount()) stored)")
}

/// Sightings read from JSON Lines text and from an agent database, in this process.
func benchmarkSightingInput(jsonLines: String, database: String) throws {
    let text = try Data(contentsOf: URL(fileURLWithPath: jsonLines))
    let (parsed, parseSeconds) = try measure {
        try text.withUnsafeBytes { bytes in
            try bytes.split(separator: 0x0A).compactMap { line in try Sighting.jsonLine(UnsafeRawBufferPointer(rebasing: line), place: "bench") }
        }
    }
    let (index, loadSeconds) = try measure { MatchingIndex(try AgentStore(path: database).sightingIndex()) }
    print("Sighting input")
    print("  JSON Lines, lines/s:                  \(rate(parsed.count, parseSeconds))  (\(parsed.count) lines)")
    print("  agent database into the matching index, sightings/s: \(rate(index.sightings.count, loadSeconds))  (\(index.sightings.count) sightings)")
}

/// One whole-process run: enctl (or enctl and enagentd) from start to exit.
struct WholeRun {
    var label: String
    var keys: Int
    var run: ChildRun
    var daemonPeakMemoryMB: Double?

    func print(ceiling: Double) {
        let keysPerSecond = Double(keys) / run.seconds
        enbench.print(label.padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(format: "%7.2f s %10.0f %8.2f× %8.0f MB", run.seconds, keysPerSecond, keysPerSecond / ceiling, run.peakMemoryMB)
                    + (daemonPeakMemoryMB.map { String(format: " (enagentd %.0f MB)", $0) } ?? ""))
    }
}

/// Checks that a detection found the exposed keys (an enctl JSON report or summary).
func checkMatches(_ run: ChildRun, key: String, label: String) throws {
    guard run.status == 0 else { throw BenchError("\(label): exit status \(run.status)") }
    let report = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
    guard let matched = report?[key] as? Int, matched == exposedKeyCount else {
        throw BenchError("\(label): \(key) is \(String(describing: report?[key])), expected \(exposedKeyCount)")
    }
}

/// Generates the detection data in `directory` unless an earlier run left it there, and measures
/// the inserts and the sighting input; run as a child, so that the parent stays small (a child's
/// peak memory as wait4 reports it starts from its parent's).
func prepareInputs(in directory: String) throws {
    try benchmarkInserts(in: directory)
    let complete = directory + "/complete"
    if !FileManager.default.fileExists(atPath: complete) {
        let (_, seconds) = try measure { try DetectionData.generate(in: directory) }
        _ = FileManager.default.createFile(atPath: complete, contents: nil)
        print(String(format: "(detection data generated in %.0f s)", seconds))
    }
    let data = DetectionData(in: directory)
    try benchmarkSightingInput(jsonLines: data.jsonLines, database: data.database)
}

let usage = """
    usage: enbench CEILING [DIR]
           enbench derivation CEILING
      CEILING  bench/derivation-ceiling.c, built (`make bench` builds and runs it)
      DIR      keep the generated data there and use it again next time (for profiling)
      derivation  only the derivation against the ceiling (`make bench-arm64`, under emulation)

    """
let arguments = CommandLine.arguments
do {
    switch arguments.count {
    case 3 where arguments[1] == "inputs":
        try prepareInputs(in: arguments[2])
        exit(0)
    case 3 where arguments[1] == "derivation":
        let directory = NSTemporaryDirectory() + "/enbench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try benchmarkDerivation(ceiling: arguments[2], in: directory)
        exit(0)
    case 2, 3:
        break
    default:
        FileHandle.standardError.write(Data(usage.utf8))
        exit(64)
    }
    let binaries = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    let enctl = binaries + "/enctl", enagentd = binaries + "/enagentd"
    let directory = arguments.count == 3 ? arguments[2] : NSTemporaryDirectory() + "/enbench-\(getpid())"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { if arguments.count == 2 { try? FileManager.default.removeItem(atPath: directory) } }

    let startup = try Startup(enagentd: enagentd, directory: directory).measure()
    print(String(format: "enagentd start (no radio, a new database): exec to READY=1 %.0f ms fastest, %.0f ms median of 7; idle RSS %.1f MB",
                 startup.fastest, startup.median, startup.idleRSSMB))
    let ceiling = try benchmarkDerivation(ceiling: arguments[1], in: directory)
    let inputs = try ChildRun.run(binaries + "/enbench", ["inputs", directory])
    print(inputs.standardOutput.trimmingCharacters(in: .newlines))
    guard inputs.status == 0 else { throw BenchError("generating the detection data failed") }
    let data = DetectionData(in: directory)

    print("Exposure detection, whole process (\(cores) cores): seconds, keys/s, × the single-core ceiling, peak memory")
    let offline = ["detect", "offline", "--json", "--public-key", data.publicKey]
    let small = WholeRun(label: "  enctl, 500k keys × 100k JSON Lines", keys: data.smallKeyCount,
                         run: try ChildRun.run(enctl, offline + ["--sightings", data.jsonLines, data.smallExport]))
    try checkMatches(small.run, key: "matchedKeyCount", label: small.label)
    small.print(ceiling: ceiling)
    let large = WholeRun(label: "  enctl, 1M keys × 4M sightings (database)", keys: data.largeKeyCount,
                         run: try ChildRun.run(enctl, offline + ["--db", data.database, data.largeExport]))
    try checkMatches(large.run, key: "matchedKeyCount", label: large.label)
    large.print(ceiling: ceiling)
    let daemon = try DaemonDetection(enagentd: enagentd, enctl: enctl, data: data, in: directory).run()
    try checkMatches(daemon.run, key: "MatchedKeys", label: daemon.label)
    daemon.print(ceiling: ceiling)
    // After the whole runs: the RPI sets would add to the peak memory of children forked later.
    let limit = try benchmarkDerivationFloor(ceiling: arguments[1], best: ceiling, data: data, in: directory)
    let best = max(Double(small.keys) / small.run.seconds, Double(large.keys) / large.run.seconds) / ceiling
    print(String(format: "Goals: keys/s ≥ 1.6× the ceiling (best %.2f×; C could reach at most %.2f× on these cores); peak memory < 200 MB at 1M × 4M (%.0f MB); the daemon within 10 %% of offline (%+.0f %%)",
                 best, limit, large.run.peakMemoryMB, (daemon.run.seconds / large.run.seconds - 1) * 100))
} catch {
    FileHandle.standardError.write(Data("enbench: \(error)\n".utf8))
    exit(1)
}
