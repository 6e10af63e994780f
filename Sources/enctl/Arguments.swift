import ArgumentParser
import ENCore
import Glibc

/// Parses option values, naming what is wrong with them.
enum ArgumentValue {
    static func bytes16(_ text: String) throws -> Bytes16 {
        do { return try Bytes16(hex: text) } catch { throw ValidationError(error.description) }
    }

    static func metadata(_ text: String) throws -> Metadata {
        do { return Metadata(bytes: try [UInt8](hex: text, byteCount: 4))! } catch { throw ValidationError(error.description) }
    }

    static func intervalNumber(_ text: String) throws -> ENIntervalNumber {
        guard let value = UInt32(text) else {
            throw ValidationError("an EN interval number is a whole number from 0 to \(UInt32.max)")
        }
        return ENIntervalNumber(value)
    }

    static func integer(_ text: String) throws -> Int {
        guard let value = Int(text) else { throw ValidationError("not a whole number") }
        return value
    }

    /// A whole number in `range`.
    static func integer<Number: FixedWidthInteger & Sendable>(in range: ClosedRange<Number>) -> @Sendable (String) throws -> Number {
        { text in
            guard let value = Number(text), range.contains(value) else {
                throw ValidationError("expected a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
    }

    /// Text of printable characters, not empty: bytes that were not UTF-8 reach enctl as U+FFFD,
    /// and a control character is no part of a name, code or id.
    static func text(_ text: String) throws -> String {
        guard !text.isEmpty else { throw ValidationError("empty") }
        guard !text.unicodeScalars.contains(where: { $0 == "\u{FFFD}" || $0.properties.generalCategory == .control }) else {
            throw ValidationError("holds bytes that are not UTF-8 text, or control characters")
        }
        return text
    }

    /// A file to read: it must exist and be no directory. What its contents hold is checked
    /// when it is read, by name, but before anything is sent anywhere.
    static func inputFile(_ path: String) throws -> String {
        var status = stat()
        guard try !self.text(path).isEmpty, stat(path, &status) == 0 else { throw ValidationError("no such file") }
        guard status.st_mode & S_IFMT != S_IFDIR else { throw ValidationError("a directory, not a file") }
        guard access(path, R_OK) == 0 else { throw ValidationError("not readable: \(String(cString: strerror(errno)))") }
        return path
    }

    /// A directory to read.
    static func inputDirectory(_ path: String) throws -> String {
        var status = stat()
        guard try !self.text(path).isEmpty, stat(path, &status) == 0 else { throw ValidationError("no such directory") }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw ValidationError("not a directory") }
        return path
    }

    /// A file to write: no directory, in a directory that exists.
    static func outputFile(_ path: String) throws -> String {
        var status = stat()
        _ = try text(path)
        if stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR { throw ValidationError("a directory, not a file") }
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        guard stat(folder.isEmpty ? "/" : folder, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw ValidationError("its directory \(folder) does not exist")
        }
        return path
    }

    /// `dB` for every adapter, or `ADDRESS=dB` for the adapter at that address.
    static func rssiCorrection(_ text: String) throws -> RssiCorrectionArgument {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        var address: BluetoothAddress?
        if parts.count == 2 {
            address = BluetoothAddress(parts[0])
            guard address != nil else {
                throw ValidationError("\"\(text)\": \"\(parts[0])\" is not an adapter's address such as \(BluetoothAddress.example)")
            }
        }
        let range = RssiCorrections.plausible
        guard let decibels = Int(parts[parts.count - 1]), range.contains(decibels) else {
            throw ValidationError("\"\(text)\": the correction must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return RssiCorrectionArgument(adapterAddress: address, decibels: decibels)
    }
}

/// One `--rssi-correction`: for every adapter when `adapterAddress` is nil.
struct RssiCorrectionArgument {
    var adapterAddress: BluetoothAddress?
    var decibels: Int

    /// The corrections the arguments give, in order: a later one for the same adapters wins.
    static func corrections(_ arguments: [Self]) -> RssiCorrections {
        arguments.reduce(into: RssiCorrections()) { corrections, argument in
            if let address = argument.adapterAddress {
                corrections.byAdapter[address] = argument.decibels
            } else {
                corrections.defaultCorrection = argument.decibels
            }
        }
    }
}
