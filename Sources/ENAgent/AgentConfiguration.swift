import ENCore
import FoundationEssentials
import Glibc

/// enagentd's configuration file: `key = value` lines, `#` comments, blank lines ignored.
/// Every key is optional; the command line overrides the file.
public struct AgentConfiguration: Equatable, Sendable {
    public var stateDirectory: String?
    public var retentionDays: Int?
    /// MiB kept free for keys and consent, below which sightings wait (`DiskReserve`); 0: none.
    public var diskReserveMebibytes: Int?
    public var radio: Bool?
    public var adapter: AdapterChoice?
    public var powerOn: Bool?
    public var txPower: Int8?
    public var rotationSeconds: ClosedRange<Int>?
    public var scanSeconds: Int?
    public var scanIntervalSeconds: Int?
    public var passiveScan: Bool?
    public var requireSynchronisedClock: Bool?
    public var trustedKeysDirectory: String?
    /// The health authority's risk configuration (JSON), read at each detection.
    public var riskConfiguration: String?
    /// dB added to every RSSI an adapter not named below reports, before attenuation is computed.
    public var rssiCorrection: Int?
    /// The same for the adapters named by address (`rssi-correction.ADDRESS`).
    public var rssiCorrectionByAdapter = [BluetoothAddress: Int]()

    /// What detection adds to each sighting's RSSI, by the adapter that recorded it.
    public var rssiCorrections: RssiCorrections {
        RssiCorrections(defaultCorrection: rssiCorrection ?? 0, byAdapter: rssiCorrectionByAdapter)
    }

    public static let defaultPath = "/etc/enagent/enagent.conf"

    /// The keys, in the order the documentation lists them.
    public static let keys = ["state-directory", RetentionDays.key, DiskReserveMebibytes.key, "radio", "adapter", "power-on", TxPower.key,
                              RotationSeconds.key, ScanSeconds.key, ScanIntervalSeconds.key, "passive-scan", "require-synchronised-clock",
                              "trusted-keys-directory", "risk-configuration", "rssi-correction", adapterCorrectionPrefix + "ADDRESS"]

    /// A key of this prefix and an adapter's address sets that adapter's RSSI correction.
    public static let adapterCorrectionPrefix = "rssi-correction."

    public init() {}

    public typealias Error = KeyValueFile.Error

    /// Reads the text of the file at `path` (named in errors).
    public init(text: String, path: String) throws(Error) {
        let file = try KeyValueFile(text: text, path: path)
        for line in file.lines {
            let fail = { (reason: String) in file.error(at: line, reason) }
            let (key, value) = (line.key, line.value)
            /// The shared check of `key`'s value, its complaint prefixed with the key.
            func checked<T>(_ check: (String) throws(InvalidValue) -> T) throws(Error) -> T {
                do { return try check(value) } catch { throw fail("\(key) \(error.reason)") }
            }
            switch key {
            case "state-directory": stateDirectory = try checked(Value.absolutePath)
            case RetentionDays.key: retentionDays = try checked(RetentionDays.value)
            case DiskReserveMebibytes.key: diskReserveMebibytes = try checked(DiskReserveMebibytes.value)
            case "radio": radio = try Self.boolean(value, key: key, fail)
            case "adapter": adapter = try checked(Value.adapter)
            case "power-on": powerOn = try Self.boolean(value, key: key, fail)
            case TxPower.key: txPower = try checked(TxPower.value)
            case RotationSeconds.key: rotationSeconds = try checked(RotationSeconds.value)
            case ScanSeconds.key: scanSeconds = try checked(ScanSeconds.value)
            case ScanIntervalSeconds.key: scanIntervalSeconds = try checked(ScanIntervalSeconds.value)
            case "passive-scan": passiveScan = try Self.boolean(value, key: key, fail)
            case "require-synchronised-clock": requireSynchronisedClock = try Self.boolean(value, key: key, fail)
            case "trusted-keys-directory": trustedKeysDirectory = try checked(Value.absolutePath)
            case "risk-configuration": riskConfiguration = try checked(Value.absolutePath)
            case "rssi-correction": rssiCorrection = try Self.integer(value, in: RssiCorrections.plausible, key: key, fail)
            case _ where key.hasPrefix(Self.adapterCorrectionPrefix):
                let name = key.dropFirst(Self.adapterCorrectionPrefix.count)
                guard let address = BluetoothAddress(name) else {
                    throw fail("\(key) = \(value): \"\(name)\" is not an adapter's address such as \(BluetoothAddress.example) (btmgmt info shows it)")
                }
                rssiCorrectionByAdapter[address] = try Self.integer(value, in: RssiCorrections.plausible, key: key, fail)
            default:
                throw fail("unknown key \"\(key)\" (known: \(Self.keys.joined(separator: ", ")))")
            }
        }
    }

    private static func integer(_ value: String, in range: ClosedRange<Int>, key: String, _ fail: (String) -> Error) throws(Error) -> Int {
        do { return try Value.integer(value, in: range) } catch { throw fail("\(key) \(error.reason)") }
    }

    /// What is wrong with a value, without the key or option: the file prefixes the key, the
    /// command line (ArgumentParser) names the option.
    public struct InvalidValue: Swift.Error, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// The checks of the values that enagent.conf and enagentd's command line both take, one
    /// function per kind of value, so that the two accept exactly the same (the bounded settings'
    /// are their types', `Setting`).
    public enum Value {
        public static func absolutePath(_ text: String) throws(InvalidValue) -> String {
            guard text.hasPrefix("/") else { throw InvalidValue(reason: "must be an absolute path, not \"\(text)\"") }
            return text
        }

        public static func adapter(_ text: String) throws(InvalidValue) -> AdapterChoice {
            guard let choice = AdapterChoice(text) else {
                throw InvalidValue(reason: "must be a name such as hci0 or, better, the controller's address such as \(BluetoothAddress.example) "
                                   + "(btmgmt info shows it), not \"\(text)\"")
            }
            return choice
        }

        static func integer<Number: FixedWidthInteger>(_ text: String, in range: ClosedRange<Number>) throws(InvalidValue) -> Number {
            guard let number = Number(text), range.contains(number) else {
                throw InvalidValue(reason: "must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
            }
            return number
        }
    }

    private static func boolean(_ value: String, key: String, _ fail: (String) -> Error) throws(Error) -> Bool {
        guard let answer = KeyValueFile.boolean(value) else { throw fail("\(key) must be yes or no") }
        return answer
    }
}
