import ENCore
import FoundationEssentials
import Glibc

/// enagentd's configuration file: `key = value` lines, `#` comments, blank lines ignored.
/// Every key is optional; the command line overrides the file.
public struct AgentConfiguration: Equatable, Sendable {
    public var stateDirectory: String?
    public var retentionDays: Int?
    public var radio: Bool?
    public var adapter: String?
    public var powerOn: Bool?
    public var txPower: Int8?
    public var rotationSeconds: ClosedRange<Int>?
    public var scanSeconds: Int?
    public var scanIntervalSeconds: Int?
    public var passiveScan: Bool?
    public var requireSynchronisedClock: Bool?
    public var trustedKeysDirectory: String?
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
    public static let keys = ["state-directory", "retention-days", "radio", "adapter", "power-on", "tx-power",
                              "rotation-seconds", "scan-seconds", "scan-interval-seconds", "passive-scan", "require-synchronised-clock",
                              "trusted-keys-directory", "rssi-correction", adapterCorrectionPrefix + "ADDRESS"]

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
            switch key {
            case "state-directory":
                guard value.hasPrefix("/") else { throw fail("state-directory must be an absolute path") }
                stateDirectory = value
            case "retention-days": retentionDays = try Self.integer(value, in: 1...365, key: key, fail)
            case "radio": radio = try Self.boolean(value, key: key, fail)
            case "adapter":
                guard value.hasPrefix("hci"), Int(value.dropFirst(3)) != nil else { throw fail("adapter must be a name such as hci0") }
                adapter = value
            case "power-on": powerOn = try Self.boolean(value, key: key, fail)
            case "tx-power": txPower = Int8(try Self.integer(value, in: -127...20, key: key, fail))
            case "rotation-seconds":
                let bounds = value.split(separator: "-").compactMap { Int($0.trimmingWhitespace()) }
                guard bounds.count == 2, bounds[0] >= 1, bounds[0] <= bounds[1] else { throw fail("rotation-seconds must be MIN-MAX, such as 600-1200") }
                rotationSeconds = bounds[0]...bounds[1]
            case "scan-seconds": scanSeconds = try Self.integer(value, in: 1...300, key: key, fail)
            case "scan-interval-seconds": scanIntervalSeconds = try Self.integer(value, in: 1...300, key: key, fail)
            case "passive-scan": passiveScan = try Self.boolean(value, key: key, fail)
            case "require-synchronised-clock": requireSynchronisedClock = try Self.boolean(value, key: key, fail)
            case "trusted-keys-directory":
                guard value.hasPrefix("/") else { throw fail("trusted-keys-directory must be an absolute path") }
                trustedKeysDirectory = value
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
        guard let number = Int(value), range.contains(number) else {
            throw fail("\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(value)\"")
        }
        return number
    }

    private static func boolean(_ value: String, key: String, _ fail: (String) -> Error) throws(Error) -> Bool {
        guard let answer = KeyValueFile.boolean(value) else { throw fail("\(key) must be yes or no") }
        return answer
    }
}
