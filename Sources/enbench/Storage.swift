import ENAgent
import ENCore
import ENStore
import Foundation

/// What sightings cost on the disk: a day on the default schedule (`RadioSchedule.standard`) with
/// `devices` phones around, each heard `receptionsPerScan` times a scan, as a controller that
/// reports every advertising event hears it (Google's RootCanal; a real one in a passive scan:
/// 16 in a 4 s scan at 250 ms), its RPI new every 15 minutes (the middle of the protocol's 10–20).
/// The scan's receptions go to the store at its end, as the agent writes them, with the agent's
/// checkpoint after each write. Measured in a child process of its own (`enbench storage-day`),
/// whose /proc/self/io counts only these writes.
struct StorageFigures: Codable {
    var devices: Int
    var receptionsPerScan: Int
    var scans: Int
    /// Rows in the sighting table at the day's end.
    var rows: Int
    /// The database file and its write-ahead log at the day's end.
    var databaseBytes: Int64
    /// /proc/self/io's write_bytes (what reached the storage layer) and wchar (what went to write(2)).
    var writtenBytes: Int64
    var passedToWriteBytes: Int64

    /// (device, scan) pairs: what detection counts as one sighting of a phone in a scan.
    var sightings: Int { devices * scans }
}

struct StorageReport: Codable {
    var schema = 1
    var measured: String
    var machine: Machine
    /// Days the store keeps (the protocol's 14), for the size at rest.
    var retentionDays = RetentionPolicy.protocolDefault.days
    var scansPerDay: Int
    var days: [StorageFigures]
}

enum StorageBench {
    static let deviceCounts = [10, 100, 1_000]
    static let receptionsPerScan = 16
    static let rotationSeconds: Int64 = 900

    /// `scans` scans on the default schedule into a new database in `directory`, in this process.
    static func day(devices: Int, scans: Int, in directory: String) throws -> StorageFigures {
        let path = directory + "/storage-\(devices).db"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let before = try IOCounters.now()
        let store = try AgentStore(path: path)
        let schedule = RadioSchedule.standard
        let start: Int64 = 1_700_006_400
        for scan in 0..<scans {
            let scanStart = start + Int64(scan * schedule.scanIntervalSeconds)
            var receptions = [Sighting]()
            receptions.reserveCapacity(devices * receptionsPerScan)
            for reception in 0..<receptionsPerScan {
                let time = scanStart + Int64(reception * schedule.scanSeconds / receptionsPerScan)
                for device in 0..<devices {
                    // Each phone rotates at its own moment.
                    let rotation = (time + Int64(device) * 7_919) / rotationSeconds
                    receptions.append(Sighting(rpi: RollingProximityIdentifier(high: UInt64(device), low: UInt64(rotation)),
                                               aem: AssociatedEncryptedMetadata(rawValue: UInt32(truncatingIfNeeded: device &* 2_654_435_761)),
                                               rssi: Int8(-45 - device % 50 - reception % 5), time: time, adapter: "hci0"))
                }
            }
            try store.record(receptions, scans: [scanStart...(scanStart + Int64(schedule.scanSeconds))])
            try store.checkpoint()
        }
        let rows = try store.sightingCount()
        try store.close()
        let after = try IOCounters.now()
        let bytes = ["", "-wal"].reduce(Int64(0)) { sum, suffix in
            sum + ((try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Int64) ?? 0)
        }
        return StorageFigures(devices: devices, receptionsPerScan: receptionsPerScan, scans: scans, rows: rows, databaseBytes: bytes,
                              writtenBytes: after.writeBytes - before.writeBytes, passedToWriteBytes: after.charactersWritten - before.charactersWritten)
    }

    /// Each count of devices in a child of its own; prints the table and writes `jsonPath`.
    static func run(smoke: Bool, jsonPath: String?, directory: String) throws {
        let machine = Machine.here()
        let scans = smoke ? 4 : 86_400 / RadioSchedule.standard.scanIntervalSeconds
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        print("Sightings on the disk, a day on the default schedule (\(RadioSchedule.standard.scanSeconds) s every \(RadioSchedule.standard.scanIntervalSeconds) s, "
              + "\(scans) scans), each phone heard \(receptionsPerScan) times a scan; a sighting is a phone in a scan")
        print("  phones  sightings a day  rows a day  database a day  bytes/sighting  written a day  written/sighting")
        let scansPerDay = 86_400 / RadioSchedule.standard.scanIntervalSeconds
        var days = [StorageFigures]()
        for devices in smoke ? [10, 100] : deviceCounts {
            let child = try ChildRun.run(executable, ["storage-day", directory, String(devices), String(scans)])
            guard child.status == 0, let figures = try? JSONDecoder().decode(StorageFigures.self, from: Data(child.standardOutput.utf8)) else {
                throw BenchError("storage-day \(devices): exit status \(child.status): \(child.standardOutput)")
            }
            days.append(figures)
            let day = Double(scansPerDay) / Double(scans)
            print(String(format: "  %6d %16.0f %11.0f %11.1f MB %15.0f %10.1f MB %17.0f", devices, Double(figures.sightings) * day, Double(figures.rows) * day,
                         Double(figures.databaseBytes) * day / 1e6, Double(figures.databaseBytes) / Double(figures.sightings),
                         Double(figures.writtenBytes) * day / 1e6, Double(figures.writtenBytes) / Double(figures.sightings)))
        }
        let report = StorageReport(measured: Date().formatted(.iso8601), machine: machine, scansPerDay: scansPerDay, days: days)
        if let jsonPath {
            try report.writeJSON(to: jsonPath)
            print("(figures written to \(jsonPath))")
        }
    }
}

/// /proc/self/io: bytes this process had written to the storage layer and passed to write(2).
struct IOCounters {
    var writeBytes: Int64
    var charactersWritten: Int64

    static func now() throws -> IOCounters {
        let fields = procFields(try String(contentsOfFile: "/proc/self/io", encoding: .utf8))
        return IOCounters(writeBytes: fields["write_bytes"].flatMap { Int64($0) } ?? 0, charactersWritten: fields["wchar"].flatMap { Int64($0) } ?? 0)
    }
}
