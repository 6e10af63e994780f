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
}
