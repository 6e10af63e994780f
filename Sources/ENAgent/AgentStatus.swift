import ENCore
import ENStore

extension AgentStatus {
    /// The status from what is known, the most fundamental reason first.
    public static func of(consent: ConsentEvent?, pausedUntil: Int64?, now: Int64, clockTrusted: Bool,
                          radioProblem: AgentStatus?) -> AgentStatus {
        guard let consent else { return .consentRequired }
        guard consent.granted else { return .disabled }
        guard clockTrusted else { return .clockUnsynchronised }
        if let pausedUntil, pausedUntil > now { return .paused }
        return radioProblem ?? .active
    }
}

/// An error a radio throws when it knows what is wrong in terms of the agent's status (a row of
/// `AgentStatus.entry` that runs the agent).
public protocol RadioProblemError: Error {
    var problem: AgentStatus { get }
}
