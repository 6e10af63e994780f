import Foundation

/// Why a JSON Lines sightings file was refused: the place (`path:line`) and what is wrong.
public struct SightingsFileError: Error, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}

extension Sighting {
    private struct JSONLine: Decodable {
        let rpi: String
        let aem: String
        let rssi: Int?
        let time: Int64
        let adapter: String?
    }

    /// Parses sightings in JSON Lines, as `enctl detect offline --sightings` reads them (the
    /// file's text; `path` names it in errors). One sighting per line:
    /// {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>}; an RSSI of 127 or
    /// null is unknown; "adapter" is optional (default "jsonl"). Blank lines are skipped.
    public static func jsonLines(_ text: String, path: String) throws(SightingsFileError) -> [Sighting] {
        var sightings = [Sighting]()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let sighting = try jsonLine(Data(line.utf8), place: "\(path):\(number + 1)") { sightings.append(sighting) }
        }
        return sightings
    }

    /// One line of the format above (`place` names it in errors); nil for a blank line.
    public static func jsonLine(_ line: Data, place: String) throws(SightingsFileError) -> Sighting? {
        guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { return nil }
        let fields: JSONLine
        do { fields = try JSONDecoder().decode(JSONLine.self, from: line) } catch {
            throw SightingsFileError("\(place): expected {\"rpi\": hex, \"aem\": hex, \"rssi\": number, \"time\": unix seconds}")
        }
        guard fields.time >= 0 else { throw SightingsFileError("\(place): time must not be negative") }
        var rssi: Int8?
        if let value = fields.rssi {
            guard let reported = Int16(exactly: value), (-128...127).contains(reported) else {
                throw SightingsFileError("\(place): rssi \(value) is outside -128...127")
            }
            rssi = Sighting.rssi(reported: reported)
        }
        do {
            return Sighting(rpi: try Bytes16(hex: fields.rpi), aem: try AssociatedEncryptedMetadata(hex: fields.aem),
                            rssi: rssi, time: fields.time, adapter: fields.adapter ?? "jsonl")
        } catch {
            throw SightingsFileError("\(place): \(error)")
        }
    }
}
