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
    /// Advertising and scanning, but sightings wait in memory: the disk holding the database has
    /// less free than the reserve kept for keys and consent (enagent.conf's disk-reserve-mb).
    case diskLow = "disk-low"
    /// Scanning, but not advertising: which interval's identifier was last on the air cannot be
    /// read from the database, and without it an identifier could go on the air twice.
    case lastIntervalUnknown = "last-interval-unknown"
    /// The agent's own state (consent, pause) cannot be read from the database: nothing runs,
    /// since whether the person consented is unknown.
    case storeUnreadable = "store-unreadable"

    /// One row of the status table: everything about a status but its name, so that a new status
    /// (a new radio problem among them) is one entry in `entry`.
    public struct Entry: Sendable {
        /// Whether the radio and the key schedule run in this status (they keep trying through radio problems).
        public let runsAgent: Bool
        /// A radio problem that holds the advertisement back while the scan runs: a scan that
        /// starts does not end it (the others are the radio's, which a working scan disproves).
        public let scansThrough: Bool
        /// A radio problem where another program's advertisement takes the adapter's one set in
        /// turns, each from a new random address, which the controller refuses while a scan runs:
        /// the agent's scan pauses for a turn.
        public let scanYieldsToOthers: Bool
        /// The status line (systemd's STATUS=): what holds, and what ends it.
        public let line: @Sendable (StatusDetails) -> String

        init(runsAgent: Bool, scansThrough: Bool, scanYieldsToOthers: Bool = false, line: @escaping @Sendable (StatusDetails) -> String) {
            self.runsAgent = runsAgent
            self.scansThrough = scansThrough
            self.scanYieldsToOthers = scanYieldsToOthers
            self.line = line
        }
    }

    public var entry: Entry {
        switch self {
        case .active:
            return Entry(runsAgent: true, scansThrough: false) { $0.radioOff ? "active: keeping keys; radio off" : "active: advertising and scanning" }
        case .paused:
            return Entry(runsAgent: false, scansThrough: false) { details in
                details.pauseEnd.map { "paused until \($0) (unix time)" } ?? "paused"
            }
        case .disabled:
            return Entry(runsAgent: false, scansThrough: false) { _ in "disabled: enable with 'enctl enable'" }
        case .consentRequired:
            return Entry(runsAgent: false, scansThrough: false) { _ in "consent-required: nothing runs until 'enctl enable'" }
        case .clockUnsynchronised:
            return Entry(runsAgent: false, scansThrough: false) { _ in "clock-unsynchronised: waiting for the system clock to be set (NTP) before making keys" }
        case .bluetoothOff:
            return Entry(runsAgent: true, scansThrough: false) { _ in "bluetooth-off: waiting for bluetoothd and a powered adapter" }
        case .noAdapter:
            return Entry(runsAgent: true, scansThrough: false) { "no-adapter: waiting for \($0.configuredAdapter ?? "an LE adapter")" }
        case .adapterConnectable:
            return Entry(runsAgent: true, scansThrough: true) { details in
                "adapter-connectable: scanning, not advertising: \(details.adapter) is connectable and would send the identifier from its own address "
                    + "(btmgmt --index \(details.adapter.dropFirst(3)) connectable off)"
            }
        case .adapterShared:
            return Entry(runsAgent: true, scansThrough: true, scanYieldsToOthers: true) { details in
                "adapter-shared: scanning, not advertising: another program advertises on \(details.adapter), a BT 4.x adapter whose one advertising set "
                    + "the kernel would lend in turns, each from a new address, linking the identifiers ('btmgmt --index \(details.adapter.dropFirst(3)) advinfo' "
                    + "lists the advertisements; a second adapter for enagentd avoids it)"
            }
        case .waitingForInterval:
            return Entry(runsAgent: true, scansThrough: true) { details in
                guard let until = details.advertisingResumesAt else { return "waiting-for-interval" }
                return "waiting-for-interval: scanning; advertising again at \(until) (unix time), when the clock is past every identifier already on the air"
            }
        case .storeUnwritable:
            return Entry(runsAgent: true, scansThrough: true) { details in
                "store-unwritable: cannot write \(details.storePath) (is the disk full? the journal has the error); scanning into memory, not advertising, resuming by itself"
            }
        case .diskLow:
            return Entry(runsAgent: true, scansThrough: true) { details in
                "disk-low: advertising and scanning; sightings wait in memory until the disk holding \(details.storePath) has more free than its reserve "
                    + "(disk-reserve-mb; the journal says how much is free), then are written by themselves"
            }
        case .lastIntervalUnknown:
            return Entry(runsAgent: true, scansThrough: true) { details in
                "last-interval-unknown: scanning, not advertising: cannot read from \(details.storePath) which interval's identifier was last on the air "
                    + "(the journal has the error), and without it one could go out twice; trying again by itself"
            }
        case .storeUnreadable:
            return Entry(runsAgent: false, scansThrough: false) { details in
                "store-unreadable: cannot read consent and pause from the database (\(details.storeReadError ?? "no reason given")); "
                    + "the radio stays off until it can, trying again every \(details.storeRetrySeconds) s"
            }
        }
    }

    public var runsAgent: Bool { entry.runsAgent }

    /// The status line for systemd's STATUS=.
    public func line(_ details: StatusDetails) -> String { entry.line(details) }
}

/// What the status lines name besides the status.
public struct StatusDetails: Sendable {
    /// No radio at all (no bus): the agent keeps keys only.
    public var radioOff: Bool
    public var pauseEnd: Int64?
    /// The adapter in use, as "hci0" ("" when none is known).
    public var adapter: String
    /// The adapter configured, as the configuration names it.
    public var configuredAdapter: String?
    /// When the next fresh identifier may go on the air (waiting-for-interval).
    public var advertisingResumesAt: Int64?
    public var storePath: String
    public var storeReadError: String?
    public var storeRetrySeconds: Int

    /// The details of a radio problem on `adapter`, which is all its sentence names.
    public static func adapter(_ name: String) -> StatusDetails {
        StatusDetails(radioOff: false, pauseEnd: nil, adapter: name, configuredAdapter: nil, advertisingResumesAt: nil, storePath: "",
                      storeReadError: nil, storeRetrySeconds: 0)
    }

    public init(radioOff: Bool, pauseEnd: Int64?, adapter: String, configuredAdapter: String?, advertisingResumesAt: Int64?,
                storePath: String, storeReadError: String?, storeRetrySeconds: Int) {
        self.radioOff = radioOff
        self.pauseEnd = pauseEnd
        self.adapter = adapter
        self.configuredAdapter = configuredAdapter
        self.advertisingResumesAt = advertisingResumesAt
        self.storePath = storePath
        self.storeReadError = storeReadError
        self.storeRetrySeconds = storeRetrySeconds
    }
}
