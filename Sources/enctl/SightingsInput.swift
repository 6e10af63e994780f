import ENCore
import ENStore
import FoundationEssentials

/// Sightings for offline detection: a JSON Lines file or an agent database.
enum SightingsInput {
    /// One sighting per line: {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>};
    /// an RSSI of 127 or null is unknown. Blank lines are skipped. The parsing is
    /// `Sighting.jsonLine` (ENCore), which the fuzzers reach too.
    /// The file is read a chunk at a time: a line over 4 KiB (a sighting takes about 100 bytes)
    /// is refused, however long, without holding it.
    static func jsonLines(_ path: String) throws -> SightingIndex {
        var index = SightingIndex()
        try InputFile.forEachLine(path, maximumLineLength: maximumLineLength) { line, number in
            do {
                if let sighting = try Sighting.jsonLine(line, place: "\(path):\(number)") { index.add(sighting) }
            } catch let error as SightingsFileError {
                throw CommandError(error.description)
            }
        }
        return index
    }

    static let maximumLineLength = 4_096

    /// All sightings in an agent database, only read: not created, migrated or chmodded.
    static func database(_ path: String) throws -> SightingIndex {
        guard FileManager.default.fileExists(atPath: path) else { throw CommandError("\(path): no such database") }
        do {
            return try AgentDatabaseReader.sightingIndex(at: path)
        } catch {
            throw CommandError("\(error)")
        }
    }
}
