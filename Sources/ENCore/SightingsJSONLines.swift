import FoundationEssentials
import Glibc

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
        let adapterAddress: String?
        let previousScanTime: Int64?
    }

    /// Parses sightings in JSON Lines, as `enctl detect offline --sightings` reads them (the
    /// file's text; `path` names it in errors). One sighting per line:
    /// {"rpi":"<32 hex>","aem":"<8 hex>","rssi":-60,"time":<unix seconds>}; an RSSI of 127 or
    /// null is unknown; "adapter" is optional (default "jsonl"), and so is "adapterAddress", the
    /// receiving adapter's address such as "00:1A:7D:DA:71:13", which picks its RSSI correction;
    /// and "previousScanTime", the unix seconds of the receiving device's scan before the one that
    /// saw this (`Sighting.previousScanTime`; missing or null: unknown). Blank lines are skipped.
    public static func jsonLines(_ text: String, path: String) throws(SightingsFileError) -> [Sighting] {
        var sightings = [Sighting]()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let read = Array(line.utf8).withUnsafeBytes { bytes in
                Result { () throws(SightingsFileError) in try jsonLine(bytes, place: "\(path):\(number + 1)") }
            }
            if let sighting = try read.get() { sightings.append(sighting) }
        }
        return sightings
    }

    /// One line of the format above (`place` names it in errors, and is only made for one);
    /// nil for a blank line.
    ///
    /// A line in the documented form, as written by enagent or a script, is read by a scanner
    /// that allocates nothing; anything else (escapes, fractions, nested values, a key twice)
    /// goes to `JSONDecoder`, which also words every error. The fuzzer checks that the two agree.
    public static func jsonLine(_ line: UnsafeRawBufferPointer, place: @autoclosure () -> String) throws(SightingsFileError) -> Sighting? {
        guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { return nil }
        if let sighting = scannedJSONLine(line) { return sighting }
        return try decodedJSONLine(Data(line), place: place())
    }

    /// The line decoded by `JSONDecoder`; every refusal names `place`.
    public static func decodedJSONLine(_ line: Data, place: String) throws(SightingsFileError) -> Sighting {
        let fields: JSONLine
        do { fields = try JSONDecoder().decodeUTF8(JSONLine.self, from: line) } catch {
            throw SightingsFileError("\(place): expected {\"rpi\": hex, \"aem\": hex, \"rssi\": number, \"time\": unix seconds}")
        }
        guard fields.time >= 0 else { throw SightingsFileError("\(place): time must not be negative") }
        guard (fields.previousScanTime ?? 0) >= 0 else { throw SightingsFileError("\(place): previousScanTime must not be negative") }
        var rssi: Int8?
        if let value = fields.rssi {
            guard let reported = Int16(exactly: value), (-128...127).contains(reported) else {
                throw SightingsFileError("\(place): rssi \(value) is outside -128...127")
            }
            rssi = Sighting.rssi(reported: reported)
        }
        var adapterAddress: BluetoothAddress?
        if let text = fields.adapterAddress {
            adapterAddress = BluetoothAddress(text)
            guard adapterAddress != nil else {
                throw SightingsFileError("\(place): adapterAddress \"\(text)\" is not an adapter's address such as \(BluetoothAddress.example)")
            }
        }
        do {
            return Sighting(rpi: try Bytes16(hex: fields.rpi), aem: try AssociatedEncryptedMetadata(hex: fields.aem),
                            rssi: rssi, time: fields.time, adapter: fields.adapter ?? "jsonl", adapterAddress: adapterAddress,
                            previousScanTime: fields.previousScanTime)
        } catch {
            throw SightingsFileError("\(place): \(error)")
        }
    }

    /// The line read by the scanner, or nil when it is not a valid sighting in the plain form
    /// (ASCII strings without escapes, integers, null), so that `decodedJSONLine` decides.
    public static func scannedJSONLine(_ line: UnsafeRawBufferPointer) -> Sighting? {
        var scanner = JSONLineScanner(line)
        return scanner.sighting()
    }
}

/// A JSON object of strings, integers and nulls, read in place.
private struct JSONLineScanner {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private enum Value {
        case string(Range<Int>)
        case integer(Int64)
        case null
    }

    mutating func sighting() -> Sighting? {
        var rpi: Bytes16?, aem: AssociatedEncryptedMetadata?, time: Int64?, rssi: Int64??, adapter: Range<Int>??
        var adapterAddress: BluetoothAddress??, previousScanTime: Int64??
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        repeat {
            skipSpace()
            guard let key = string() else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = value() else { return nil }
            switch (Field(bytes[key]), value) {
            case (.rpi, .string(let hex)) where rpi == nil:
                guard let bytes = Self.hex16(bytes[hex]) else { return nil }
                rpi = bytes
            case (.aem, .string(let hex)) where aem == nil:
                guard hex.count == 8, let word = Self.hexWord(bytes[hex]) else { return nil }
                aem = AssociatedEncryptedMetadata(rawValue: UInt32(word))
            case (.time, .integer(let seconds)) where time == nil:
                time = seconds
            case (.rssi, .integer(let value)) where rssi == nil:
                rssi = .some(value)
            case (.rssi, .null) where rssi == nil:
                rssi = .some(nil)
            case (.adapter, .string(let name)) where adapter == nil:
                adapter = .some(name)
            case (.adapter, .null) where adapter == nil:
                adapter = .some(nil)
            case (.adapterAddress, .string(let text)) where adapterAddress == nil:
                guard let address = BluetoothAddress(utf8: bytes[text]) else { return nil }
                adapterAddress = .some(address)
            case (.adapterAddress, .null) where adapterAddress == nil:
                adapterAddress = .some(nil)
            case (.previousScanTime, .integer(let seconds)) where previousScanTime == nil && seconds >= 0:
                previousScanTime = .some(seconds)
            case (.previousScanTime, .null) where previousScanTime == nil:
                previousScanTime = .some(nil)
            case (.rpi, _), (.aem, _), (.time, _), (.rssi, _), (.adapter, _), (.adapterAddress, _), (.previousScanTime, _):
                return nil  // the wrong type, or a key twice
            case (.other, _):
                break  // another key: ignored, as JSONDecoder ignores it
            }
            skipSpace()
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        guard offset == bytes.count, let rpi, let aem, let time, time >= 0 else { return nil }
        var reported: Int8?
        if let value = rssi ?? nil {
            guard (-128...127).contains(value) else { return nil }
            reported = Sighting.rssi(reported: Int16(value))
        }
        let adapterName = (adapter ?? nil).map { String(decoding: bytes[$0], as: UTF8.self) } ?? "jsonl"
        return Sighting(rpi: rpi, aem: aem, rssi: reported, time: time, adapter: adapterName, adapterAddress: adapterAddress ?? nil,
                        previousScanTime: previousScanTime ?? nil)
    }

    private enum Field {
        case rpi, aem, time, rssi, adapter, adapterAddress, previousScanTime, other

        init(_ key: Slice<UnsafeRawBufferPointer>) {
            // The length first, then the bytes: a generic comparison of each key with each name
            // took an eighth of the time of a line.
            func named(_ name: StaticString) -> Bool {
                key.count == name.utf8CodeUnitCount && memcmp(key.base.baseAddress! + key.startIndex, name.utf8Start, key.count) == 0
            }
            if named("rpi") { self = .rpi }
            else if named("aem") { self = .aem }
            else if named("time") { self = .time }
            else if named("rssi") { self = .rssi }
            else if named("adapter") { self = .adapter }
            else if named("adapterAddress") { self = .adapterAddress }
            else if named("previousScanTime") { self = .previousScanTime }
            else { self = .other }
        }
    }

    private mutating func skipSpace() {
        while offset < bytes.count, bytes[offset] == 0x20 || bytes[offset] == 0x09 || bytes[offset] == 0x0D || bytes[offset] == 0x0A {
            offset += 1
        }
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    private mutating func value() -> Value? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] {
        case UInt8(ascii: "\""): return string().map(Value.string)
        case UInt8(ascii: "n"):
            guard bytes.count - offset >= 4, bytes[offset..<offset + 4].elementsEqual("null".utf8) else { return nil }
            offset += 4
            return .null
        default: return integer().map(Value.integer)
        }
    }

    /// A string's contents: printable ASCII without escapes (anything else is the decoder's).
    private mutating func string() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = offset
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                return start..<offset - 1
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            offset += 1
        }
        return nil
    }

    /// An integer as JSON writes it (no leading zero, no fraction or exponent), up to 18 digits.
    private mutating func integer() -> Int64? {
        let negative = take(UInt8(ascii: "-"))
        let start = offset
        var magnitude: Int64 = 0
        while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9") {
            // Past 18 digits the number is the decoder's; counting on cannot overflow.
            if offset - start < 18 { magnitude = magnitude * 10 + Int64(bytes[offset] - UInt8(ascii: "0")) }
            offset += 1
        }
        let digits = offset - start
        guard digits > 0, digits <= 18, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") || bytes[offset] | 0x20 == UInt8(ascii: "e") { return nil }
        return negative ? -magnitude : magnitude
    }

    private static func hex16(_ digits: Slice<UnsafeRawBufferPointer>) -> Bytes16? {
        guard digits.count == 32, let high = hexWord(digits.prefix(16)), let low = hexWord(digits.suffix(16)) else { return nil }
        return Bytes16(high: high, low: low)
    }

    /// Up to 16 hex digits as one number.
    private static func hexWord(_ digits: Slice<UnsafeRawBufferPointer>) -> UInt64? {
        var word: UInt64 = 0
        for digit in digits {
            // A digit is 0x30...0x39; a letter, lowered by its 0x20 bit, 0x61...0x66.
            let decimal = digit &- UInt8(ascii: "0"), letter = (digit | 0x20) &- UInt8(ascii: "a")
            let value: UInt8
            if decimal < 10 { value = decimal } else if letter < 6 { value = letter &+ 10 } else { return nil }
            word = word &<< 4 | UInt64(value)
        }
        return word
    }
}
