import ENCore
import ENSystemd

/// Where the agent wants its advertisement, and its own reasons to hold it back: each case carries
/// what only it needs. Why the radio has none is the radio's to say (`RadioActivity`). `RadioAgent`
/// moves it through its `enter` alone; the status and the D-Bus properties derive from it and the
/// radio's activity (`RadioState.init(activity:advertiser:scan:storeFailing:)`).
public enum AdvertiserState: Sendable, Equatable, CustomStringConvertible {
    /// The agent is not running.
    case idle
    /// The identifier of `interval` was put on the air.
    case onAir(interval: ENIntervalNumber)
    /// Off the air until `resumesAt` (unix time): the identifier of the interval the clock reads
    /// was on the air already (the clock went back, or a restart used up the day's keys).
    case waitingForInterval(resumesAt: Int64)
    /// The store refused what must be kept before an advertisement (the key, the interval on the
    /// air) or could not say which interval was last on the air.
    case storeRefused(AgentStatus)
    /// Off the air for what the radio says (`RadioActivity.advertisingProblem`: it refused the
    /// advertisement, the adapter turned unfit, the radio went away), or for nothing it need show
    /// (another program removed the advertisement): the rotation, or the radio's return, puts one on.
    case offAir
    /// The machine sleeps; the wake (the radio's return) brings a fresh identifier.
    case asleep

    /// What the status says of this state alone (nil: nothing of the agent's holds the
    /// advertisement back).
    public var problem: AgentStatus? {
        switch self {
        case .idle, .onAir, .offAir, .asleep: nil
        case .waitingForInterval: .waitingForInterval
        case .storeRefused(let problem): problem
        }
    }

    /// Whether the agent wants an advertisement on the air now, so that the radio's reason for
    /// having none is the status's.
    var wantsAdvertisement: Bool {
        switch self {
        case .onAir, .offAir: true
        case .idle, .waitingForInterval, .storeRefused, .asleep: false
        }
    }

    public var isOnAir: Bool {
        if case .onAir = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .idle: "idle"
        case .onAir(let interval): "on-air(interval \(interval))"
        case .waitingForInterval(let resumesAt): "waiting-for-interval(until \(resumesAt))"
        case .storeRefused(let problem): "store-refused(\(problem.rawValue))"
        case .offAir: "off-air"
        case .asleep: "asleep"
        }
    }
}

/// A state with `enter` its only mutator: the compiler keeps every change of it going through
/// the one function that logs it (in the spirit of iwd's `station_enter_state`). The agent's
/// advertiser and its scan are each one (`Advertiser`, `Scanner`); the agent's own `enter`s run
/// their entry actions.
public final class Phase<State: Equatable & CustomStringConvertible> {
    public private(set) var state: State
    /// What the log calls it ("advertiser").
    private let name: String
    private let logger: Logger

    public init(_ name: String, _ initial: State, logger: Logger) {
        self.name = name
        self.state = initial
        self.logger = logger
    }

    /// Moves to `new` and logs the transition at debug level; nothing, not even a log line, when
    /// the state stays as it is.
    public func enter(_ new: State, because reason: @autoclosure () -> String) {
        guard new != state else { return }
        logger.debug("\(name): \(state) → \(new) (\(reason()))")
        state = new
    }
}

public typealias Advertiser = Phase<AdvertiserState>
public typealias Scanner = Phase<ScanState>

extension Phase where State == AdvertiserState {
    public convenience init(logger: Logger) { self.init("advertiser", .idle, logger: logger) }
}

extension Phase where State == ScanState {
    public convenience init(logger: Logger) { self.init("scan", .stopped, logger: logger) }
}

/// Whether the agent wants a scan: the radio's activity says whether it runs (`RadioActivity.scan`).
public enum ScanState: Sendable, Equatable, CustomStringConvertible {
    case stopped
    /// Asked of the radio for this cycle: it runs, or the radio holds it (until the advertisement
    /// is on the air, say).
    case started
    /// The radio refused the last start (retried each second): why is the radio's to say
    /// (`RadioActivity.scanProblem`), and that takes over the status until a scan starts.
    case refused

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .started: "started"
        case .refused: "refused"
        }
    }
}

extension RadioState {
    /// The status's view of the radio, from what the radio does (`activity`), the advertiser's
    /// state, the scan's, whether the last write to the store failed, and whether sightings wait
    /// for room on the disk. Advertising while the agent wants its advertisement on the air and the
    /// radio has it there; scanning while the agent wants a scan and the radio runs it (not while
    /// it waits or starts). The problem shown is the most pressing: the scan's refusal (the radio
    /// is not there to do anything), then an unwritable store (nothing new may go on the air until
    /// it is written), then what of the agent's holds the advertisement back, then the radio's
    /// reason for having none where the agent wants one, then sightings waiting (everything else
    /// runs).
    public init(activity: RadioActivity, advertiser: AdvertiserState, scan: ScanState, storeFailing: Bool, sightingsWaitForDisk: Bool = false) {
        guard advertiser != .idle else {
            self.init()
            return
        }
        let problem: AgentStatus? = if scan == .refused, let scanProblem = activity.scanProblem { scanProblem } else if storeFailing { .storeUnwritable }
                                    else { advertiser.problem ?? Self.radioProblem(activity, advertiser) ?? (sightingsWaitForDisk ? .diskLow : nil) }
        let resumesAt: Int64? = if problem == .waitingForInterval, case .waitingForInterval(let resumesAt) = advertiser { resumesAt } else { nil }
        self.init(advertising: advertiser.isOnAir && activity.advertisement == .onAir, scanning: scan == .started && activity.scan == .running,
                  problem: problem, advertisingResumesAt: resumesAt, adapter: activity.adapter)
    }

    /// The radio's reason for having no advertisement on the air, while the agent wants one.
    private static func radioProblem(_ activity: RadioActivity, _ advertiser: AdvertiserState) -> AgentStatus? {
        advertiser.wantsAdvertisement && activity.advertisement != .onAir ? activity.advertisingProblem : nil
    }
}
