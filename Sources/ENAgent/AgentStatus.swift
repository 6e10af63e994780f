import ENCore
import ENStore

extension AgentStatus {
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
