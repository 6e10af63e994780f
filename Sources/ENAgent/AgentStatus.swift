import ENStore

/// What the agent is doing, as `enctl status` and the D-Bus `Status` property tell it.
public enum AgentStatus: String, Sendable, CaseIterable {
    /// Advertising and scanning (or, without a radio, keeping keys).
    case active
    /// Paused by the person until `PausedUntil`.
    case paused
    /// Consent was given once and then withdrawn (SetEnabled false).
    case disabled
    /// Never enabled: nothing runs until someone enables it and so gives consent.
    case consentRequired = "consent-required"
    /// Waiting for NTP to set the clock before making keys.
    case clockUnsynchronised = "clock-unsynchronised"
    /// bluetoothd is not running, or the adapter is off and may not be switched on.
    case bluetoothOff = "bluetooth-off"
    /// The configured adapter (or any LE adapter) is missing.
    case noAdapter = "no-adapter"
    /// Scanning, but not advertising: the adapter is connectable, so the kernel would send the
    /// identifier in connectable PDUs from the adapter's own address, which links every RPI.
    case adapterConnectable = "adapter-connectable"
    /// Scanning, but not advertising: another program advertises on a legacy (BT 4.x) adapter,
    /// whose one advertising set the kernel lends to each advertisement in turn, from a new
    /// address each turn: the identifier would go out from several addresses, which links them.
    case adapterShared = "adapter-shared"
    /// Scanning, but not advertising until a later interval: the identifier of the interval the
    /// clock reads went on the air already (the clock went back, or a restart used up the day's keys).
    case waitingForInterval = "waiting-for-interval"
    /// The database cannot be written (a full disk): scanning, sightings held in memory, but not
    /// advertising, since no new key and no interval on the air can be kept.
    case storeUnwritable = "store-unwritable"
    /// Scanning, but not advertising: which interval's identifier was last on the air cannot be
    /// read from the database, and without it an identifier could go on the air twice.
    case lastIntervalUnknown = "last-interval-unknown"
    /// The agent's own state (consent, pause) cannot be read from the database: nothing runs,
    /// since whether the person consented is unknown.
    case storeUnreadable = "store-unreadable"

    /// The status from what is known, the most fundamental reason first.
    public static func of(consent: ConsentEvent?, pausedUntil: Int64?, now: Int64, clockTrusted: Bool,
                          radioProblem: RadioProblem?) -> AgentStatus {
        guard let consent else { return .consentRequired }
        guard consent.granted else { return .disabled }
        guard clockTrusted else { return .clockUnsynchronised }
        if let pausedUntil, pausedUntil > now { return .paused }
        switch radioProblem {
        case .noAdapter?: return .noAdapter
        case .bluetoothOff?: return .bluetoothOff
        case .adapterConnectable?: return .adapterConnectable
        case .adapterShared?: return .adapterShared
        case .identifierUsed?: return .waitingForInterval
        case .storeUnwritable?: return .storeUnwritable
        case .lastIntervalUnknown?: return .lastIntervalUnknown
        case nil: return .active
        }
    }

    /// Whether the radio and the key schedule run in this status (they keep trying through radio problems).
    public var runsAgent: Bool {
        switch self {
        case .active, .bluetoothOff, .noAdapter, .adapterConnectable, .adapterShared, .waitingForInterval, .storeUnwritable, .lastIntervalUnknown: return true
        case .paused, .disabled, .consentRequired, .clockUnsynchronised, .storeUnreadable: return false
        }
    }
}

/// Why the radio cannot work right now.
public enum RadioProblem: Sendable, Equatable {
    case noAdapter
    case bluetoothOff
    case adapterConnectable
    case adapterShared
    /// The current interval's identifier was on the air already: the next fresh one comes at this
    /// unix time.
    case identifierUsed(until: Int64)
    /// The store refused a write (a full disk).
    case storeUnwritable
    /// The store could not say which interval was last on the air: no advertising until it can.
    case lastIntervalUnknown
}

/// An error a radio throws when it knows what is wrong in terms the agent's status can use.
public protocol RadioProblemError: Error {
    var problem: RadioProblem { get }
}
