import ENCore
import ENStore

/// What the key schedule needs from storage.
public protocol TemporaryExposureKeyStore: Sendable {
    func temporaryExposureKey(startingAt start: ENIntervalNumber) throws(StoreError) -> TemporaryExposureKey?
    /// Stores `key` unless its rolling period has one already; returns the stored key.
    func insertTemporaryExposureKeyIfAbsent(_ key: TemporaryExposureKey, createdAt: Int64) throws(StoreError) -> TemporaryExposureKey
    func temporaryExposureKeys(validAfter cutoff: Int64) throws(StoreError) -> [TemporaryExposureKey]
    /// Ends the day's current key after `lastInterval` and adds `replacement`, unless the day has
    /// `limit` keys; returns the replacement, or nil when it may not.
    func rollTemporaryExposureKey(endingAfter lastInterval: ENIntervalNumber, to replacement: TemporaryExposureKey,
                                  createdAt: Int64, limit: Int) throws(StoreError) -> TemporaryExposureKey?
}

extension AgentStore: TemporaryExposureKeyStore {}
