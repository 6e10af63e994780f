import ENCore
import ENStore

/// One of enagentd's settings: enagent.conf's key, and the command line's option of the same
/// name. Each type owns its default, what it allows and its check, which the file, the command
/// line and its help, the man page's test and the values it makes read.
public protocol Setting {
    associatedtype Value: Sendable
    static var key: String { get }
    static var standard: Value { get }
    /// The value as enagent.conf and the help write it.
    static func text(_ value: Value) -> String
    /// The value `text` gives, or what is wrong with it, without the key (the file and
    /// ArgumentParser each name it their way).
    static func value(_ text: String) throws(AgentConfiguration.InvalidValue) -> Value
}

extension Setting {
    public static func text(_ value: Value) -> String { "\(value)" }
    public static var standardText: String { text(standard) }
}

/// A whole number from a range.
public protocol BoundedSetting: Setting where Value: FixedWidthInteger {
    static var range: ClosedRange<Value> { get }
}

extension BoundedSetting {
    public static func value(_ text: String) throws(AgentConfiguration.InvalidValue) -> Value {
        try AgentConfiguration.Value.integer(text, in: range)
    }
    /// The range as the help writes it: 1...300.
    public static var rangeText: String { "\(range.lowerBound)...\(range.upperBound)" }
}

/// How long a scan lasts, in seconds: Google's 4-second scan; at most a scan interval.
public enum ScanSeconds: BoundedSetting {
    public static let key = "scan-seconds"
    public static let standard = 4
    public static let range = 1...ScanIntervalSeconds.range.upperBound
}

/// From the start of one scan to the next, in seconds: at most Google's scan interval, which v1
/// detection takes each sighting to stand for (`ExposureConfigurationV1.scanInterval`), so that
/// every device nearby is seen within it. Its least is `RadioSchedule.check`'s: scans apart.
public enum ScanIntervalSeconds: BoundedSetting {
    public static let key = "scan-interval-seconds"
    public static let standard = Int(ExposureConfigurationV1.scanInterval)
    public static let range = 1...Int(ExposureConfigurationV1.scanInterval)
}

/// A new identifier at a random moment in this range of seconds after the last (and at each new
/// key): Google's 10 to 20 minutes.
public enum RotationSeconds: Setting {
    public static let key = "rotation-seconds"
    public static let standard = 600...1_200
    public static func text(_ value: ClosedRange<Int>) -> String { "\(value.lowerBound)-\(value.upperBound)" }
    public static func value(_ text: String) throws(AgentConfiguration.InvalidValue) -> ClosedRange<Int> {
        let bounds = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0.trimmingWhitespace()) }
        guard bounds.count == 2, let low = bounds[0], let high = bounds[1], low >= 1, low <= high else {
            throw AgentConfiguration.InvalidValue(reason: "must be MIN-MAX, such as \(Self.text(standard)), not \"\(text)\"")
        }
        return low...high
    }
}

/// Days keys, sightings and exposure windows are kept: the protocol's 14 by default.
public enum RetentionDays: BoundedSetting {
    public static let key = "retention-days"
    public static let standard = RetentionPolicy.protocolDefault.days
    public static let range = 1...365
}

/// MiB kept free for keys and consent, below which sightings wait (`DiskReserve`); 0 keeps none,
/// up to 64 GiB.
public enum DiskReserveMebibytes: BoundedSetting {
    public static let key = "disk-reserve-mb"
    public static let standard = DiskReserve.defaultMebibytes
    public static let range = 0...65_536
}

/// The TX power the metadata carries when the controller cannot be asked, in dBm.
public enum TxPower: BoundedSetting {
    public static let key = "tx-power"
    public static let standard: Int8 = 0
    public static let range: ClosedRange<Int8> = -127...20
}
