import Dispatch
import ENAgent
import ENCore
import ENStore
import ENSystemd

/// The daemon's periodic work: make sure the day's key exists (so it is in the history even
/// when nothing asked for it), forget what is past the retention period, and fold the database's
/// write-ahead log into it (a daemon killed by a power cut never reaches its close).
final class Upkeep {
    static let period = DispatchTimeInterval.seconds(60)

    private let store: AgentStore
    private let clock: any AgentClock
    private let retention: RetentionPolicy
    private let synchronisation: (any ClockSynchronisation)?
    private let logger: Logger
    private var steps = ClockSteps()
    /// The steady clock's lead over the awake one at the last run: the time asleep until then.
    private var asleep: Double?

    /// With `synchronisation`, retention deletes nothing while the kernel calls the clock
    /// unsynchronised (`date -s` marks it so until NTP confirms).
    init(store: AgentStore, clock: any AgentClock, retention: RetentionPolicy, synchronisation: (any ClockSynchronisation)?,
         logger: Logger) {
        self.store = store
        self.clock = clock
        self.retention = retention
        self.synchronisation = synchronisation
        self.logger = logger
    }

    /// Returns whether the wall clock was stepped, or the machine slept, since the last run: either
    /// way the identifier on the air may be for an interval (and a day) long past.
    @discardableResult
    func run() throws -> Bool {
        let now = clock.now, steady = clock.steadySeconds
        let step = steps.observe(wall: now, steady: steady)
        if step != 0 {
            logger.warning("the system clock was stepped \(step > 0 ? "forward" : "back") by \(abs(step)) s; retention holds back by \(steps.forwardSteps) s until it is stepped back or enagentd restarts")
        }
        let slept = asleep.map { steady - clock.awakeSeconds - $0 } ?? 0
        asleep = steady - clock.awakeSeconds
        let resumed = slept > Double(ClockSteps.tolerance)
        if resumed { logger.notice("the system resumed after sleeping \(Int(slept)) s") }
        // Under a clock stepped back, no key for a day before one that has keys: it would never go
        // on the air (the agent waits for the clock to pass the last interval it advertised).
        if try store.temporaryExposureKeys(validAfter: UTCDay(containing: now).end).isEmpty {
            let key = try KeySchedule.dayKey(at: now, in: store)
            logger.debug("current key", metadata: ["rolling-start": "\(key.rollingStartIntervalNumber)"])
        }
        try store.checkpoint()
        guard synchronisation?.isSynchronised ?? true else {
            logger.debug("retention waits for a synchronised clock")
            return step != 0 || resumed
        }
        let deleted = try store.applyRetention(retention, now: steps.retentionNow(wall: now))
        if !deleted.isEmpty {
            logger.info("retention deleted \(deleted.temporaryExposureKeys) keys, \(deleted.sightings) sightings, \(deleted.exposureWindows) exposure windows")
        }
        return step != 0 || resumed
    }
}
