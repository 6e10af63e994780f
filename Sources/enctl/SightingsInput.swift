import ENCore
import ENStore
import Foundation

/// Sightings for offline detection: a JSON Lines file or an agent database.
enum SightingsInput {
    /// One sighting per line: {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>};
    /// an RSSI of 127 or null is unknown. Blank lines are skipped. The parsing is
    /// `Sighting.jsonLines` (ENCore), which the fuzzers reach too.
    static func jsonLines(_ path: String) throws -> [Sighting] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw CommandError("\(path): cannot read: \(error.localizedDescription)")
        }
        do {
            return try Sighting.jsonLines(text, path: path)
        } catch {
            throw CommandError(error.description)
        }
    }

    /// All sightings in an agent database (which must exist: it is not created).
    static func database(_ path: String) throws -> [Sighting] {
        guard FileManager.default.fileExists(atPath: path) else { throw CommandError("\(path): no such database") }
        do {
            return try AgentStore(path: path).sightings()
        } catch {
            throw CommandError("\(error)")
        }
    }
}
