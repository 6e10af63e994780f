import Foundation

/// Where the agent reads the time, so tests can run days in milliseconds.
public protocol AgentClock: Sendable {
    /// Unix seconds.
    var now: Int64 { get }
}

/// The system's wall clock.
public struct SystemClock: AgentClock {
    public init() {}
    public var now: Int64 { Int64(Date().timeIntervalSince1970) }
}
