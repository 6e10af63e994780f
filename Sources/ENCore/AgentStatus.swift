/// What the agent is doing, as `enctl status` and the D-Bus `Status` property tell it. Here, below
/// both enagentd and enctl, so that enctl's help lists every status from the type itself.
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

    /// Whether the radio and the key schedule run in this status (they keep trying through radio problems).
    public var runsAgent: Bool {
        switch self {
        case .active, .bluetoothOff, .noAdapter, .adapterConnectable, .adapterShared, .waitingForInterval, .storeUnwritable, .lastIntervalUnknown: return true
        case .paused, .disabled, .consentRequired, .clockUnsynchronised, .storeUnreadable: return false
        }
    }
}

