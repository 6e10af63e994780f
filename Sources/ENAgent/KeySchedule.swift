import ENCore
import ENStore

/// What the device broadcasts during one interval.
public struct Broadcast: Equatable, Sendable {
    public var interval: ENIntervalNumber
    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata

    /// The 20 bytes of 0xFD6F service data: RPI ‖ AEM.
    public var serviceData: [UInt8] { rpi.bytes + aem.bytes }
}

/// Why the key schedule cannot give a key.
public enum KeyScheduleError: Error, CustomStringConvertible {
    case timeOutOfRange(Int64)

    public var description: String {
        switch self {
        case .timeOutOfRange(let time):
            return "The clock reads \(time) s since 1970, outside the range of EN interval numbers; set the system time."
        }
    }
}

/// The device's own keys: one TEK per UTC day (rolling period), created on first use, persisted
/// before it is used so that a restart the same day broadcasts under the same key; rolled to a
/// fresh key for the rest of the day when a restart must not repeat an identifier (`rollKey`).
///
/// Not thread-safe: the agent drives it from one task.
public final class KeySchedule {
    private let store: any TemporaryExposureKeyStore
    private let clock: any AgentClock
    private let crypto: ExposureCrypto
    private let retention: RetentionPolicy
    private var current: (key: TemporaryExposureKey, rpik: Bytes16, aemk: Bytes16)?

    public init(store: any TemporaryExposureKeyStore, clock: any AgentClock, retention: RetentionPolicy = .protocolDefault) throws {
        self.store = store
        self.clock = clock
        self.retention = retention
        crypto = try ExposureCrypto()
    }

    /// The TEK valid at `time` (default: now), created and stored if this day has none yet.
    public func key(at time: Int64? = nil) throws -> TemporaryExposureKey {
        try derivedKeys(at: time ?? clock.now).key
    }

    /// The RPI and AEM to broadcast at `time` (default: now) with `metadata`.
    public func broadcast(metadata: Metadata, at time: Int64? = nil) throws -> Broadcast {
        let time = time ?? clock.now
        guard let interval = ENIntervalNumber(unixSeconds: time) else { throw KeyScheduleError.timeOutOfRange(time) }
        let keys = try derivedKeys(at: time)
        let rpi = try crypto.rollingProximityIdentifier(key: keys.rpik, interval: interval)
        return Broadcast(interval: interval, rpi: rpi, aem: try crypto.encryptMetadata(metadata, key: keys.aemk, rpi: rpi))
    }

    /// The device's keys whose validity reaches into the retention window (the last 14 days),
    /// oldest first, today's included.
    public func keyHistory() throws -> [TemporaryExposureKey] {
        try store.temporaryExposureKeys(validAfter: retention.cutoff(now: clock.now))
    }

    /// Key servers accept at most this many keys with one rolling start (Google's
    /// MAX_SAME_START_INTERVAL_KEYS): the day's first key and two rolls.
    public static let maximumKeysPerDay = 3

    /// Ends the day's key with the interval of `time` (whose RPI it keeps covering) and rolls to
    /// a fresh key for the rest of the day, so that a new identifier can go on the air within an
    /// interval whose RPI was broadcast already. As EN v1.5's same-day release does, both keys
    /// keep the day's rolling start. Nil when the day has `maximumKeysPerDay` keys already.
    public func rollKey(at time: Int64) throws -> TemporaryExposureKey? {
        guard let interval = ENIntervalNumber(unixSeconds: time) else { throw KeyScheduleError.timeOutOfRange(time) }
        _ = try derivedKeys(at: time)
        let fresh = TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: interval.rollingPeriodStart)
        guard let key = try store.rollTemporaryExposureKey(endingAfter: interval, to: fresh, createdAt: time, limit: Self.maximumKeysPerDay) else {
            return nil
        }
        current = (key, crypto.rollingProximityIdentifierKey(for: key.keyData), crypto.associatedEncryptedMetadataKey(for: key.keyData))
        return key
    }

    /// The TEK of `time`'s day as stored, or a new one stored now (the first of two writers wins).
    /// Also for enagentd's upkeep, which makes sure each day has its key with the radio off too,
    /// without a schedule of its own beside the radio's.
    public static func dayKey(at time: Int64, in store: any TemporaryExposureKeyStore) throws -> TemporaryExposureKey {
        guard let start = ENIntervalNumber(unixSeconds: time)?.rollingPeriodStart else { throw KeyScheduleError.timeOutOfRange(time) }
        return try store.temporaryExposureKey(startingAt: start)
            ?? store.insertTemporaryExposureKeyIfAbsent(
                TemporaryExposureKey(keyData: try ExposureCrypto.generateTemporaryExposureKey(), rollingStartIntervalNumber: start),
                createdAt: time)
    }

    private func derivedKeys(at time: Int64) throws -> (key: TemporaryExposureKey, rpik: Bytes16, aemk: Bytes16) {
        guard let start = ENIntervalNumber(unixSeconds: time)?.rollingPeriodStart else { throw KeyScheduleError.timeOutOfRange(time) }
        if let current, current.key.rollingStartIntervalNumber == start { return current }
        let key = try Self.dayKey(at: time, in: store)
        let derived = (key, crypto.rollingProximityIdentifierKey(for: key.keyData), crypto.associatedEncryptedMetadataKey(for: key.keyData))
        current = derived
        return derived
    }
}
