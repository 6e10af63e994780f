/// A member of a JSON configuration with its path (`minutesAtAttenuationWeights[1].weight`), so
/// that every refusal names the field at fault: for configurations nested deeper than
/// `ConfigurationDecoding`'s flat keys.
struct ConfigurationJSON {
    let value: JSONValue
    let path: String

    init(_ value: JSONValue, path: String = "") {
        self.value = value
        self.path = path
    }

    func refuse(_ reason: String) -> ConfigurationError { ConfigurationError(key: path.isEmpty ? "(the configuration)" : path, reason: reason) }

    /// The members of an object that has no keys but `known`.
    func object(keys known: [String]) throws(ConfigurationError) -> [String: JSONValue] {
        guard case .object(let members) = value else { throw refuse("must be a JSON object") }
        for key in members.keys.sorted() where !known.contains(key) {
            throw ConfigurationError(key: child(key).path,
                                     reason: "is not a configuration key here (known: \(known.sorted().joined(separator: ", ")))")
        }
        return members
    }

    /// The member `key` of this object (whose keys `object(keys:)` checked); nil when missing.
    func optional(_ key: String) -> ConfigurationJSON? {
        value[key] == nil ? nil : child(key)
    }

    func required(_ key: String) throws(ConfigurationError) -> ConfigurationJSON {
        guard let member = optional(key) else { throw child(key).refuse("is missing") }
        return member
    }

    private func child(_ key: String) -> ConfigurationJSON {
        ConfigurationJSON(value[key] ?? .null, path: path.isEmpty ? key : path + "." + key)
    }

    func elements() throws(ConfigurationError) -> [ConfigurationJSON] {
        guard let elements = value.array else { throw refuse("must be a list") }
        return elements.enumerated().map { ConfigurationJSON($1, path: "\(path)[\($0)]") }
    }

    func number(atLeast minimum: Double = -.greatestFiniteMagnitude) throws(ConfigurationError) -> Double {
        guard let number = value.number, number.isFinite, number >= minimum else {
            throw refuse(minimum > -.greatestFiniteMagnitude ? "must be a number of at least \(ConfigurationError.format(minimum))" : "must be a number")
        }
        return number
    }

    func integer(in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let number = value.integer, let integer = Int(exactly: number), range.contains(integer) else {
            throw refuse("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return integer
    }

    func bool() throws(ConfigurationError) -> Bool {
        guard case .bool(let flag) = value else { throw refuse("must be true or false") }
        return flag
    }

}
