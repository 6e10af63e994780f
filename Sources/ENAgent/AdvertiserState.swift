import ENCore
import ENSystemd

/// Where the agent's advertisement is: each case carries what only it needs. `RadioAgent` moves it
/// through its `enter` alone; the status and the D-Bus properties derive from it
/// (`RadioState.init(advertiser:scan:storeFailing:)`).
public enum AdvertiserState: Sendable, Equatable, CustomStringConvertible {
    /// The agent is not running.
    case idle
    /// The identifier of `interval` is on the air.
    case onAir(interval: ENIntervalNumber)
    /// Off the air until `resumesAt` (unix time): the identifier of the interval the clock reads
    /// was on the air already (the clock went back, or a restart used up the day's keys).
    case waitingForInterval(resumesAt: Int64)
    /// Taken off the air because the adapter turned unfit for it (connectable, or shared with
    /// another program's advertisement on a legacy adapter); the rotation tries again each second.
    case steppedAside(AgentStatus)
    /// The radio refused the advertisement, or the store refused what must be kept before it
    /// (the key, the interval on the air) or could not say which interval was last on the air.
    case refused(AgentStatus)
    /// The radio went away and took the advertisement with it; its return brings a fresh one,
    /// which within the same interval costs a fresh key.
    case radioLost
    /// The machine sleeps; the wake (the radio's return) brings a fresh identifier.
    case asleep
    /// Off the air with nothing to show for it: another program removed the advertisement, or a
    /// scan that runs disproved the radio's refusal or loss. The rotation (or the radio's return)
    /// puts one on the air again.
    case retrying

    /// What the status says of this state alone (nil: nothing holds the advertisement back).
    public var problem: AgentStatus? {
        switch self {
        case .idle, .onAir, .asleep, .retrying: nil
        case .waitingForInterval: .waitingForInterval
        case .steppedAside(let problem), .refused(let problem): problem
        case .radioLost: .bluetoothOff
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
        case .steppedAside(let problem): "stepped-aside(\(problem.rawValue))"
        case .refused(let problem): "refused(\(problem.rawValue))"
        case .radioLost: "radio-lost"
        case .asleep: "asleep"
        case .retrying: "retrying"
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
    /// The radio refused the last start (retried each second): its problem takes over the status
    /// until a scan starts.
    case refused(AgentStatus)

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .started: "started"
        case .refused(let problem): "refused(\(problem.rawValue))"
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
    /// it is written), then what holds the advertisement back, then sightings waiting (everything
    /// else runs).
    public init(activity: RadioActivity, advertiser: AdvertiserState, scan: ScanState, storeFailing: Bool, sightingsWaitForDisk: Bool = false) {
        guard advertiser != .idle else {
            self.init()
            return
        }
        let problem: AgentStatus? = if case .refused(let scanProblem) = scan { scanProblem } else if storeFailing { .storeUnwritable }
                                    else { advertiser.problem ?? (sightingsWaitForDisk ? .diskLow : nil) }
        let resumesAt: Int64? = if problem == .waitingForInterval, case .waitingForInterval(let resumesAt) = advertiser { resumesAt } else { nil }
        self.init(advertising: advertiser.isOnAir && activity.advertisement == .onAir, scanning: scan == .started && activity.scan == .running,
                  problem: problem, advertisingResumesAt: resumesAt, adapter: activity.adapter)
    }
}
