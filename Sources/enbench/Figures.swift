import CENOpenSSL
import Foundation

/// How much work each measure does: `full` for `make bench`, `smoke` for `make bench-smoke`, which
/// runs every measure on tiny inputs so that the generator and its JSON cannot rot.
struct BenchSizes: Codable, Equatable {
    var derivationKeys: Int
    var insertBatches: Int
    var insertBatchSize: Int
    var smallExportKeys: Int
    var largeExportKeys: Int
    /// Keys of the export that the large one's peak memory is compared with (its first keys).
    var fewerExportKeys: Int
    var jsonLinesSightings: Int
    var databaseSightings: Int
    /// Keys of the exports seen ten times each among the sightings: what a detection must find.
    var exposedKeys: Int
    var startupRuns: Int

    static let full = BenchSizes(derivationKeys: 200_000, insertBatches: 10, insertBatchSize: 10_000, smallExportKeys: 500_000,
                                 largeExportKeys: 1_000_000, fewerExportKeys: 100_000, jsonLinesSightings: 100_000, databaseSightings: 4_000_000,
                                 exposedKeys: 100, startupRuns: 7)
    static let smoke = BenchSizes(derivationKeys: 2_000, insertBatches: 2, insertBatchSize: 1_000, smallExportKeys: 2_000,
                                  largeExportKeys: 4_000, fewerExportKeys: 400, jsonLinesSightings: 1_000, databaseSightings: 20_000,
                                  exposedKeys: 10, startupRuns: 2)
}

/// One run of enbench as docs/figures/bench.json records it, for scripts/render-figures.py:
/// measurements only (keys/s, seconds, MB); the renderer works out the ratios.
struct BenchReport: Codable {
    var schema = 1
    var measured: String
    var machine: Machine
    var sizes: BenchSizes
    var startup: StartupFigures
    var derivation: DerivationFigures
    var inputs: InputFigures
    var detection: DetectionFigures
    /// The C baseline deriving and looking up, one per set of sightings.
    var lookups: [LookupFigures]
}

struct StartupFigures: Codable {
    var fastestMilliseconds: Double
    var medianMilliseconds: Double
    var idleResidentMB: Double
}

struct DerivationFigures: Codable {
    var ceilingKeysPerSecond: Double
    var enagentKeysPerSecond: Double
}

/// Measured in enbench's `inputs` child, which hands them over in a file.
struct InputFigures: Codable {
    var insertsPerSecond: Double
    var jsonLinesPerSecond: Double
    var databaseSightingsPerSecond: Double
}

struct DetectionFigures: Codable {
    var offlineJSONLines: WholeRunFigures
    var offlineDatabase: WholeRunFigures
    /// The same sightings as `offlineDatabase` with `fewerExportKeys` keys: whether peak memory
    /// depends on the number of keys.
    var offlineDatabaseFewerKeys: WholeRunFigures
    var daemon: WholeRunFigures
    /// The small export against the JSON Lines' sightings in a database: offline, and through enagentd.
    var offlineSmallDatabase: WholeRunFigures
    var daemonSmall: WholeRunFigures
}

struct WholeRunFigures: Codable {
    var seconds: Double
    var keysPerSecond: Double
    var peakMemoryMB: Double
    var daemonPeakMemoryMB: Double?
}

struct LookupFigures: Codable {
    /// `jsonLines` or `database`, all of their sightings or (`oneDay`) those a key of one day can match.
    var sightings: String
    var oneDay: Bool
    var count: Int
    var keysPerSecond: Double
    /// The same on every core of the machine, a thread each sharing the keys.
    var allCoresKeysPerSecond: Double
}

/// What the figures were measured on.
struct Machine: Codable {
    var cpu: String
    var cores: Int
    /// Of the CPU's features, those the derivation's speed depends on (aes, sha_ni, on arm64 aes, sha2).
    var cryptoFeatures: [String]
    var virtualMachine: Bool
    var openSSL: String
    var kernel: String
    /// /proc/loadavg's one-minute figure when enbench started: other work on the machine.
    var loadAverage: Double
    /// The CPU time other processes (and a hypervisor's steal) took while enbench ran, in cores
    /// on average: what the figures had to share the machine with. Set when the run ends.
    var otherWorkCores = 0.0

    static func here() -> Machine {
        let cpuinfo = procFields((try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "")
        func field(_ name: String) -> String? { cpuinfo[name] }
        let features = Set((field("flags") ?? field("Features") ?? "").split(separator: " ").map(String.init))
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let loadavg = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return Machine(cpu: field("model name") ?? field("Model") ?? "unknown",
                       cores: ProcessInfo.processInfo.activeProcessorCount,
                       cryptoFeatures: ["aes", "sha_ni", "sha2"].filter(features.contains),
                       virtualMachine: features.contains("hypervisor"),
                       openSSL: String(cString: OpenSSL_version(OPENSSL_VERSION)),
                       kernel: kernel,
                       loadAverage: loadavg.split(separator: " ").first.flatMap { Double($0) } ?? 0)
    }
}

/// The `name: value` lines of a /proc file (cpuinfo, io), each name's first value, trimmed.
func procFields(_ text: String) -> [String: String] {
    var fields = [String: String]()
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { continue }
        let name = parts[0].trimmingCharacters(in: .whitespaces)
        if fields[name] == nil { fields[name] = parts[1].trimmingCharacters(in: .whitespaces) }
    }
    return fields
}

/// The machine's busy CPU time and enbench's own with its children, to tell how much of the
/// machine other work took between two readings.
struct CPUTimes {
    var machineBusySeconds: Double
    var ownSeconds: Double
    var wallClock: ContinuousClock.Instant

    static func now() -> CPUTimes {
        // /proc/stat's first line: user nice system idle iowait irq softirq steal, in clock ticks.
        let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        let ticks = stat.split(separator: "\n").first?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
        let busyTicks = ticks.enumerated().filter { [0, 1, 2, 5, 6, 7].contains($0.offset) }.map(\.element).reduce(0, +)
        func seconds(_ who: Int32) -> Double {
            var usage = rusage()
            getrusage(who, &usage)
            return [usage.ru_utime, usage.ru_stime].map { Double($0.tv_sec) + Double($0.tv_usec) / 1e6 }.reduce(0, +)
        }
        return CPUTimes(machineBusySeconds: busyTicks / Double(sysconf(Int32(_SC_CLK_TCK))),
                        ownSeconds: seconds(RUSAGE_SELF.rawValue) + seconds(RUSAGE_CHILDREN.rawValue), wallClock: .now)
    }

    /// Since `start`: the other processes' CPU time in cores on average.
    func otherWorkCores(since start: CPUTimes) -> Double {
        let others = (machineBusySeconds - start.machineBusySeconds) - (ownSeconds - start.ownSeconds)
        return max(0, others) / (wallClock - start.wallClock).seconds
    }
}

extension Encodable {
    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try (encoder.encode(self) + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
    }
}

extension Decodable {
    init(jsonFile path: String) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
