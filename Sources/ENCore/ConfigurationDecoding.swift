/// Why an exposure configuration was refused; names the key and what it must be.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public let key: String
    public let reason: String

    public var description: String { "\"\(key)\" \(reason)" }
}

/// A JSON key by name, for configurations that check which keys they were given.
extension ConfigurationError {
    /// A bound as a person writes it: 5, not 5.0.
    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

struct AnyKey: CodingKey {
    let stringValue: String
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}

extension KeyedDecodingContainer where Key == AnyKey {
    /// Refuses keys the configuration does not know: a misspelt key must not pass unnoticed.
    func requireOnly(_ known: [String]) throws {
        for key in allKeys where !known.contains(key.stringValue) {
            throw ConfigurationError(key: key.stringValue, reason: "is not a configuration key (known: \(known.sorted().joined(separator: ", ")))")
        }
    }

    func number(_ name: String, in range: ClosedRange<Double>, default value: Double) throws -> Double {
        guard contains(AnyKey(name)) else { return value }
        guard let number = try? decode(Double.self, forKey: AnyKey(name)), range.contains(number) else {
            throw ConfigurationError(key: name, reason: "must be a number from \(ConfigurationError.format(range.lowerBound)) to \(ConfigurationError.format(range.upperBound))")
        }
        return number
    }

    func integer(_ name: String, in range: ClosedRange<Int>, default value: Int) throws -> Int {
        guard contains(AnyKey(name)) else { return value }
        guard let number = try? decode(Int.self, forKey: AnyKey(name)), range.contains(number) else {
            throw ConfigurationError(key: name, reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    func integers(_ name: String, count: Int, in range: ClosedRange<Int>, default value: [Int]) throws -> [Int] {
        guard contains(AnyKey(name)) else { return value }
        guard let numbers = try? decode([Int].self, forKey: AnyKey(name)), numbers.count == count, numbers.allSatisfy(range.contains) else {
            throw ConfigurationError(key: name, reason: "must be a list of \(count) whole numbers from \(range.lowerBound) to \(range.upperBound)")
        }
        return numbers
    }

}
