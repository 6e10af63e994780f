import Dispatch
import ENAgent
import ENStore
import Logging

/// The daemon's periodic work: make sure the day's key exists (so it is in the history even
/// when nothing asked for it) and forget what is past the retention period.
final class Upkeep {
    static let period = DispatchTimeInterval.seconds(60)

    private let store: AgentStore
    private let clock: any AgentClock
    private let schedule: KeySchedule
    private let retention: RetentionPolicy
    private let logger: Logger

    init(store: AgentStore, clock: any AgentClock, retention: RetentionPolicy, logger: Logger) throws {
        self.store = store
        self.clock = clock
        self.retention = retention
        self.logger = logger
        schedule = try KeySchedule(store: store, clock: clock, retention: retention)
    }

    func run() throws {
        let key = try schedule.key()
        logger.debug("current key", metadata: ["rolling-start": "\(key.rollingStartIntervalNumber)"])
        let deleted = try store.applyRetention(retention, now: clock.now)
        if !deleted.isEmpty {
            logger.info("retention deleted \(deleted.temporaryExposureKeys) keys, \(deleted.sightings) sightings, \(deleted.exposureWindows) exposure windows")
        }
    }
}
