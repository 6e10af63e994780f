import ArgumentParser
import ENCore

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
