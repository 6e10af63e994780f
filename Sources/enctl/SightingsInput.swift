import ENCore
import ENStore
import Foundation

/// Sightings for offline detection: a JSON Lines file or an agent database.
enum SightingsInput {
    private struct Line: Decodable {
        let rpi: String
        let aem: String
        let rssi: Int?
        let time: Int64
        let adapter: String?
    }

    /// One sighting per line: {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>};
    /// an RSSI of 127 or null is unknown. Blank lines are skipped.
    static func jsonLines(_ path: String) throws -> [Sighting] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw CommandError("\(path): cannot read: \(error.localizedDescription)")
        }
        var sightings = [Sighting]()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.allSatisfy(\.isWhitespace) {
            let place = "\(path):\(number + 1)"
            let fields: Line
            do { fields = try JSONDecoder().decode(Line.self, from: Data(line.utf8)) } catch {
                throw CommandError("\(place): expected {\"rpi\": hex, \"aem\": hex, \"rssi\": number, \"time\": unix seconds}")
            }
            do {
                guard fields.time >= 0 else { throw CommandError("\(place): time must not be negative") }
                let rssi = try fields.rssi.map { value -> Int8? in
                    guard let reported = Int16(exactly: value), (-128...127).contains(reported) else {
                        throw CommandError("\(place): rssi \(value) is outside -128...127")
                    }
                    return Sighting.rssi(reported: reported)
                } ?? nil
                sightings.append(Sighting(rpi: try Bytes16(hex: fields.rpi), aem: try AssociatedEncryptedMetadata(hex: fields.aem),
                                          rssi: rssi, time: fields.time, adapter: fields.adapter ?? "jsonl"))
            } catch let error as HexError {
                throw CommandError("\(place): \(error)")
            }
        }
        return sightings
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
