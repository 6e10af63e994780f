import ENCore
import ENKeyFiles
import ENStore
import Foundation

// enagent's benchmarks, run by `make bench` on release builds. Figures and ratios against a
// baseline measured in the same run, never assertions: speed targets live here, not in timed
// unit tests. docs/performance.md renders the JSON it writes (scripts/render-figures.py).

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

/// The C baseline's and enagent's single-core derivation (RPIK and 144 RPIs per key) of the same
/// keys; checks that both derive the same RPIs. The baseline's keys/s is the ceiling.
func benchmarkDerivation(ceiling: String, keyCount: Int, in directory: String) throws -> DerivationFigures {
    let keys = try (0..<keyCount).map { _ in try ExposureCrypto.generateTemporaryExposureKey() }
    let keyFile = directory + "/keys.bin"
    try Data(keys.flatMap(\.bytes)).write(to: URL(fileURLWithPath: keyFile))
    let crypto = try ExposureCrypto()
    var checksum: (UInt64, UInt64) = (0, 0)
    func deriveAll() throws {
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
    // The best of five runs of each (a run takes a tenth of a second), taken in turn so that
    // other work on the machine slows both alike: ceilings, not averages.
    var best = 0.0, ours = 0.0, baselineChecksum = ""
    for _ in 0..<5 {
        let run = try ChildRun.run(ceiling, [keyFile])
        let fields = run.standardOutput.split(separator: " ")
        guard run.status == 0, fields.count == 2, let keysPerSecond = Double(fields[0]) else {
            throw BenchError("\(ceiling) failed: \(run.standardOutput)")
        }
        best = max(best, keysPerSecond)
        baselineChecksum = fields[1].trimmingCharacters(in: .whitespacesAndNewlines)
        let (_, seconds) = try measure(deriveAll)
        ours = max(ours, Double(keys.count) / seconds)
    }
    // Five passes over the same keys XOR their RPIs five times: the same as one.
    let oursChecksum = withUnsafeBytes(of: &checksum) { $0.hexString }
    guard oursChecksum == baselineChecksum else {
        throw BenchError("the C baseline derived other RPIs (\(baselineChecksum), enagent \(oursChecksum))")
    }
    print("RPI derivation, one core: RPIK (HKDF-SHA256) and 144 RPIs (AES-128-ECB) per key, \(keys.count) keys")
    print("  keys/s, C with OpenSSL (the ceiling): \(rate(1, 1 / best))")
    print("  keys/s, enagent (ENCore):             \(rate(1, 1 / ours))  (\(String(format: "%.2f", ours / best))× the ceiling; the same RPIs)")
    return DerivationFigures(ceilingKeysPerSecond: best, enagentKeysPerSecond: ours)
}

/// The C baseline's derivation with every RPI looked up among sightings, on one core and before
/// any file is read: what a whole detection could reach per core at most, so `cores` times that
/// is its limit here. Looked up among all the sightings, and among those a key of one day can
/// match (its day ±2 h, protocol.md §3), as an index split by day would do.
func benchmarkDerivationFloor(ceiling: String, best: Double, data: DetectionData, in directory: String) throws -> [LookupFigures] {
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
    let databaseDayShare = data.sizes.databaseSightings * daysSightings.count / sightings.count
    let sets: [(label: String, sightings: String, oneDay: Bool, rpis: [RollingProximityIdentifier])] = [
        ("among the JSON Lines sightings", "jsonLines", false, sightings.map(\.rpi)),
        ("among those of one day ±2 h", "jsonLines", true, daysSightings.map(\.rpi)),
        ("among the database's sightings", "database", false, randomRPIs(data.sizes.databaseSightings)),
        ("among those of one day ±2 h", "database", true, randomRPIs(databaseDayShare)),
    ]
    print("RPI derivation and lookup, C with OpenSSL (no file read): keys/s and × the ceiling on one core, then on all \(cores) cores")
    var figures = [LookupFigures]()
    for set in sets {
        let file = directory + "/rpis.bin"
        var bytes = Data(capacity: set.rpis.count * 16)
        for rpi in set.rpis + markers { rpi.withUnsafeBytes { bytes.append(contentsOf: $0) } }
        try bytes.write(to: URL(fileURLWithPath: file))
        // The fastest of three runs on one core, then of three on every core.
        func fastest(threads: Int) throws -> Double {
            var fastest = 0.0
            for _ in 0..<3 {
                let run = try ChildRun.run(ceiling, [directory + "/keys.bin", file, String(threads)])
                let fields = run.standardOutput.split(separator: " ")
                guard run.status == 0, fields.count == 2, let keysPerSecond = Double(fields[0]) else {
                    throw BenchError("\(ceiling) failed: \(run.standardOutput)")
                }
                guard Int(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) == markers.count else {
                    throw BenchError("\(ceiling) found \(fields[1]) RPIs of its keys among the sightings, not \(markers.count)")
                }
                fastest = max(fastest, keysPerSecond)
            }
            return fastest
        }
        let oneCore = try fastest(threads: 1), allCores = try fastest(threads: cores)
        print("  " + "\(set.label) (\(set.rpis.count))".padding(toLength: 46, withPad: " ", startingAt: 0)
              + String(format: "%10.0f %6.2f× %10.0f %6.2f×", oneCore, oneCore / best, allCores, allCores / best))
        try FileManager.default.removeItem(atPath: file)
        figures.append(LookupFigures(sightings: set.sightings, oneDay: set.oneDay, count: set.rpis.count, keysPerSecond: oneCore,
                                     allCoresKeysPerSecond: allCores))
    }
    return figures
}

func benchmarkInserts(batchCount: Int, batchSize: Int, in directory: String) throws -> Double {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory + "/inserts.db" + suffix) }
    let store = try AgentStore(path: directory + "/inserts.db")
    let batches = (0..<batchCount).map { batch in
        (0..<batchSize).map { index in
            Sighting(rpi: Bytes16(high: .random(in: .min ... .max), low: .random(in: .min ... .max)),
                     aem: AssociatedEncryptedMetadata(rawValue: UInt32(index)), rssi: -60,
                     time: 1_700_000_000 + Int64(batch * batchSize + index), adapter: "hci0")
        }
    }
    let (_, seconds) = try measure { for batch in batches { try store.record(batch) } }
    print("Sighting inserts (WAL, secure_delete, indexed by time, each batch's entries in the index of sightings)")
    print("  sightings/s, batches of \(batchSize):      \(rate(batchCount * batchSize, seconds))  (\(try store.sightingCount()) stored)")
    return Double(batchCount * batchSize) / seconds
}

/// Sightings read from JSON Lines text and from an agent database, in this process.
func benchmarkSightingInput(jsonLines: String, database: String) throws -> (jsonLinesPerSecond: Double, databaseSightingsPerSecond: Double) {
    let text = try Data(contentsOf: URL(fileURLWithPath: jsonLines))
    let (parsed, parseSeconds) = try measure {
        try text.withUnsafeBytes { bytes in
            try bytes.split(separator: 0x0A).compactMap { line in try Sighting.jsonLine(UnsafeRawBufferPointer(rebasing: line), place: "bench") }
        }
    }
    let (index, loadSeconds) = try measure { MatchingIndex(try AgentStore(path: database).detectionIndex()) }
    print("Sighting input")
    print("  JSON Lines, lines/s:                  \(rate(parsed.count, parseSeconds))  (\(parsed.count) lines)")
    print("  agent database into the matching index, sightings/s: \(rate(index.sightings.count, loadSeconds))  (\(index.sightings.count) sightings)")
    return (Double(parsed.count) / parseSeconds, Double(index.sightings.count) / loadSeconds)
}

/// A whole-process measure: how to run it once, and the key of its JSON output that must hold
/// the number of exposed keys.
struct WholeMeasure {
    var check: String
    var run: () throws -> WholeRun
}

/// Each measure's fastest of `rounds` runs, the measures taken in turn in each round: a
/// process's wall-clock time moves by tens of percent from run to run on a virtual machine (and
/// for a while after the data were written), its fastest run much less, and taking turns
/// spreads a slow spell over every measure instead of one. Every run is checked to have found
/// `expectedMatches` keys.
func fastestRuns(_ rounds: Int, expectedMatches: Int, _ measures: [WholeMeasure]) throws -> [WholeRun] {
    var fastest = [WholeRun?](repeating: nil, count: measures.count)
    for _ in 0..<max(1, rounds) {
        for (index, measure) in measures.enumerated() {
            let run = try measure.run()
            try checkMatches(run.run, key: measure.check, expected: expectedMatches, label: run.label)
            if fastest[index].map({ run.run.seconds < $0.run.seconds }) ?? true { fastest[index] = run }
        }
    }
    return fastest.map { $0! }
}

/// Whole-process runs of each measure: the fastest of this many (make bench; bench-smoke runs each once).
let wholeRuns = 5

/// One whole-process run: enctl (or enctl and enagentd) from start to exit.
struct WholeRun {
    var label: String
    var keys: Int
    var run: ChildRun
    var daemonPeakMemoryMB: Double?

    var keysPerSecond: Double { Double(keys) / run.seconds }

    var figures: WholeRunFigures {
        WholeRunFigures(seconds: run.seconds, keysPerSecond: keysPerSecond, peakMemoryMB: run.peakMemoryMB, daemonPeakMemoryMB: daemonPeakMemoryMB)
    }

    func print(ceiling: Double) {
        enbench.print(label.padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(format: "%7.2f s %10.0f %8.2f× %8.0f MB", run.seconds, keysPerSecond, keysPerSecond / ceiling, run.peakMemoryMB)
                    + (daemonPeakMemoryMB.map { String(format: " (enagentd %.0f MB)", $0) } ?? ""))
    }
}

/// Checks that a detection found the `expected` exposed keys (an enctl JSON report or summary).
func checkMatches(_ run: ChildRun, key: String, expected: Int, label: String) throws {
    guard run.status == 0 else { throw BenchError("\(label): exit status \(run.status)") }
    let report = try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any]
    guard let matched = report?[key] as? Int, matched == expected else {
        throw BenchError("\(label): \(key) is \(String(describing: report?[key])), expected \(expected)")
    }
}

/// Generates the detection data in `directory` unless an earlier run left it there (of the same
/// sizes), and measures the inserts and the sighting input into `directory`/inputs.json; run as a
/// child, so that the parent stays small (a child's peak memory as wait4 reports it starts from
/// its parent's).
func prepareInputs(in directory: String, sizes: BenchSizes) throws {
    let insertsPerSecond = try benchmarkInserts(batchCount: sizes.insertBatches, batchSize: sizes.insertBatchSize, in: directory)
    let complete = directory + "/complete.json"
    if (try? BenchSizes(jsonFile: complete)) != sizes || !FileManager.default.fileExists(atPath: DetectionData(in: directory, sizes: sizes).smallDatabase) {
        let (_, seconds) = try measure { try DetectionData.generate(in: directory, sizes: sizes) }
        try sizes.writeJSON(to: complete)
        print(String(format: "(detection data generated in %.0f s)", seconds))
        // On the disk before anything is timed: the kernel's writeback of the new files slowed
        // the whole-process runs that followed by half.
        sync()
    }
    let data = DetectionData(in: directory, sizes: sizes)
    let input = try benchmarkSightingInput(jsonLines: data.jsonLines, database: data.database)
    try InputFigures(insertsPerSecond: insertsPerSecond, jsonLinesPerSecond: input.jsonLinesPerSecond,
                     databaseSightingsPerSecond: input.databaseSightingsPerSecond).writeJSON(to: directory + "/inputs.json")
}

/// Every measure in turn, printed as it comes; the whole run as JSON at `jsonPath`.
func benchmarkAll(ceiling: String, sizes: BenchSizes, dataDirectory: String, jsonPath: String?) throws {
    var machine = Machine.here()
    let measured = Date().formatted(.iso8601)
    let startTimes = CPUTimes.now()
    let binaries = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    let enctl = binaries + "/enctl", enagentd = binaries + "/enagentd"

    let startup = try Startup(enagentd: enagentd, directory: dataDirectory).measure(runs: sizes.startupRuns)
    print(String(format: "enagentd start (no radio, a new database): exec to READY=1 %.0f ms fastest, %.0f ms median of %d; idle RSS %.1f MB",
                 startup.fastestMilliseconds, startup.medianMilliseconds, sizes.startupRuns, startup.idleResidentMB))
    let derivation = try benchmarkDerivation(ceiling: ceiling, keyCount: sizes.derivationKeys, in: dataDirectory)
    let best = derivation.ceilingKeysPerSecond
    let inputsRun = try ChildRun.run(binaries + "/enbench", ["inputs", dataDirectory] + (sizes == .smoke ? ["--smoke"] : []))
    print(inputsRun.standardOutput.trimmingCharacters(in: .newlines))
    guard inputsRun.status == 0 else { throw BenchError("generating the detection data failed") }
    let inputs = try InputFigures(jsonFile: dataDirectory + "/inputs.json")
    let data = DetectionData(in: dataDirectory, sizes: sizes)

    let runs = sizes == .smoke ? 1 : wholeRuns
    print("Exposure detection, whole process (\(cores) cores), the fastest of \(runs) runs each: seconds, keys/s, × the single-core ceiling, peak memory")
    let offline = ["detect", "offline", "--json", "--public-key", data.publicKey]
    func offlineRun(_ label: String, keys: Int, _ arguments: [String]) -> WholeMeasure {
        WholeMeasure(check: "matchedKeyCount") { WholeRun(label: label, keys: keys, run: try ChildRun.run(enctl, offline + arguments)) }
    }
    func daemonRun(database: String, export: String, keys: Int) -> WholeMeasure {
        WholeMeasure(check: "MatchedKeys") {
            try DaemonDetection(enagentd: enagentd, enctl: enctl, publicKey: data.publicKey, database: database, export: export, keys: keys,
                                label: "  enctl → enagentd, the same through D-Bus", directory: dataDirectory).run()
        }
    }
    let whole = try fastestRuns(runs, expectedMatches: sizes.exposedKeys, [
        offlineRun("  enctl, \(sizes.smallExportKeys) keys × \(sizes.jsonLinesSightings) JSON Lines", keys: sizes.smallExportKeys,
                   ["--sightings", data.jsonLines, data.smallExport]),
        offlineRun("  enctl, the same in a database", keys: sizes.smallExportKeys, ["--db", data.smallDatabase, data.smallExport]),
        daemonRun(database: data.smallDatabase, export: data.smallExport, keys: sizes.smallExportKeys),
        offlineRun("  enctl, \(sizes.largeExportKeys) keys × \(sizes.databaseSightings) (database)", keys: sizes.largeExportKeys,
                   ["--db", data.database, data.largeExport]),
        // The same sightings with the first keys only: the key files stream, so peak memory should not grow with their keys.
        offlineRun("  enctl, \(sizes.fewerExportKeys) keys × \(sizes.databaseSightings) (database)", keys: sizes.fewerExportKeys,
                   ["--db", data.database, data.fewerExport]),
        daemonRun(database: data.database, export: data.largeExport, keys: sizes.largeExportKeys),
    ])
    for run in whole { run.print(ceiling: best) }
    let (small, smallDatabase, daemonSmall, large, fewer, daemon) = (whole[0], whole[1], whole[2], whole[3], whole[4], whole[5])
    // After the whole runs: the RPI sets would add to the peak memory of children forked later.
    let lookups = try benchmarkDerivationFloor(ceiling: ceiling, best: best, data: data, in: dataDirectory)
    // The C program on the same sightings; its run among one day's alone, a smaller set, is the bound beside it.
    let allCores = lookups.first { $0.sightings == "jsonLines" && !$0.oneDay }?.allCoresKeysPerSecond ?? 0
    let oneDayAllCores = lookups.first { $0.sightings == "jsonLines" && $0.oneDay }?.allCoresKeysPerSecond ?? 0
    print(String(format: "Goals: enctl, %d keys × %d JSON Lines ≥ 0.8× C's derivation and lookups on all cores among them (%.2f×; %.2f× C among one day's); "
                 + "%d keys × %d from a database ≤ 1.5 s (%.2f s) and ≤ 200 MB (%.0f MB); the daemon within 10 %% of offline (%+.0f %%, %+.0f %%); "
                 + "peak memory independent of keys (%.0f MB at %d keys, %.0f MB at %d)",
                 sizes.smallExportKeys, sizes.jsonLinesSightings, small.keysPerSecond / allCores, small.keysPerSecond / oneDayAllCores,
                 sizes.largeExportKeys, sizes.databaseSightings, large.run.seconds, large.run.peakMemoryMB,
                 (daemonSmall.run.seconds / smallDatabase.run.seconds - 1) * 100, (daemon.run.seconds / large.run.seconds - 1) * 100,
                 fewer.run.peakMemoryMB, sizes.fewerExportKeys, large.run.peakMemoryMB, sizes.largeExportKeys))

    machine.otherWorkCores = CPUTimes.now().otherWorkCores(since: startTimes)
    print(String(format: "(other work on the machine took %.2f cores on average meanwhile)", machine.otherWorkCores))

    guard let jsonPath else { return }
    let report = BenchReport(measured: measured, machine: machine, sizes: sizes, startup: startup, derivation: derivation, inputs: inputs,
                             detection: DetectionFigures(offlineJSONLines: small.figures, offlineDatabase: large.figures,
                                                         offlineDatabaseFewerKeys: fewer.figures, daemon: daemon.figures,
                                                         offlineSmallDatabase: smallDatabase.figures, daemonSmall: daemonSmall.figures),
                             lookups: lookups)
    try report.writeJSON(to: jsonPath)
    print("(figures written to \(jsonPath))")
}

let usage = """
    usage: enbench [--smoke] [--json FILE] [--data DIR] CEILING
           enbench derivation CEILING
           enbench storage [--smoke] [--json FILE]
      CEILING      bench/derivation-ceiling.c, built (`make bench` builds and runs it)
      --smoke      every measure on tiny inputs (`make bench-smoke`: the generator still works)
      --json FILE  write the figures there (`make bench`: docs/figures/bench.json)
      --data DIR   keep the generated data there and use it again next time (for profiling)
      derivation   only the derivation against the ceiling (`make bench-arm64`, under emulation)
      storage      sightings' bytes in the database and written, a day at 10, 100 and 1,000 phones
                   (`make bench`: docs/figures/storage.json)

    """

/// The command line, or nil when it is not one `usage` describes.
struct Options {
    var ceiling: String
    var sizes = BenchSizes.full
    var jsonPath: String?
    var dataDirectory: String?

    init?(_ arguments: ArraySlice<String>) {
        var arguments = arguments
        var ceiling: String?
        while let argument = arguments.popFirst() {
            switch argument {
            case "--smoke": sizes = .smoke
            case "--json", "--data":
                guard let path = arguments.popFirst() else { return nil }
                if argument == "--json" { jsonPath = path } else { dataDirectory = path }
            case _ where !argument.hasPrefix("-") && ceiling == nil: ceiling = argument
            default: return nil
            }
        }
        guard let ceiling else { return nil }
        self.ceiling = ceiling
    }
}

let arguments = CommandLine.arguments
do {
    switch Array(arguments.dropFirst()) {
    case let command where command.count >= 2 && command[0] == "inputs":
        try prepareInputs(in: command[1], sizes: command.dropFirst(2) == ["--smoke"] ? .smoke : .full)
    case let command where command.count == 4 && command[0] == "storage-day":
        guard let devices = Int(command[2]), let scans = Int(command[3]) else { throw BenchError("storage-day DIR DEVICES SCANS") }
        let figures = try StorageBench.day(devices: devices, scans: scans, in: command[1])
        print(String(decoding: try JSONEncoder().encode(figures), as: UTF8.self))
    case let command where command.first == "storage":
        var rest = command.dropFirst(), smoke = false, jsonPath: String?
        while let argument = rest.popFirst() {
            switch argument {
            case "--smoke": smoke = true
            case "--json": jsonPath = rest.popFirst()
            default: throw BenchError("storage [--smoke] [--json FILE]")
            }
        }
        let directory = NSTemporaryDirectory() + "/enbench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try StorageBench.run(smoke: smoke, jsonPath: jsonPath, directory: directory)
    case let command where command.count == 2 && command[0] == "derivation":
        let directory = NSTemporaryDirectory() + "/enbench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try benchmarkDerivation(ceiling: command[1], keyCount: BenchSizes.full.derivationKeys, in: directory)
    default:
        guard let options = Options(arguments.dropFirst()) else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(64)
        }
        let directory = options.dataDirectory ?? NSTemporaryDirectory() + "/enbench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if options.dataDirectory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        try benchmarkAll(ceiling: options.ceiling, sizes: options.sizes, dataDirectory: directory, jsonPath: options.jsonPath)
    }
} catch {
    FileHandle.standardError.write(Data("enbench: \(error)\n".utf8))
    exit(1)
}
