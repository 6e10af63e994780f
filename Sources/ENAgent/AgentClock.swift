import Foundation

/// Where the agent reads the time, so tests can run days in milliseconds.
public protocol AgentClock: Sendable {
    /// Unix seconds.
    var now: Int64 { get }
    /// Real seconds until this clock reads `time`, for timers.
    func realSeconds(until time: Int64) -> Double
}

/// The system's wall clock.
public struct SystemClock: AgentClock {
    public init() {}
    public var now: Int64 { Int64(Date().timeIntervalSince1970) }
    public func realSeconds(until time: Int64) -> Double { Double(time) - Date().timeIntervalSince1970 }
}

/// The wall clock run `scale` times faster from `origin` (unix seconds) on: the lab uses it to
/// see many EN intervals (and days) in minutes; processes given the same origin agree on the
/// time. Never for real use: keys would not match anyone's.
public struct ScaledClock: AgentClock {
    public let scale: Double
    private let origin: Double

    public init(scale: Double, origin: Int64) {
        precondition(scale >= 1, "a scaled clock runs faster, not slower")
        self.scale = scale
        self.origin = Double(origin)
    }

    public var now: Int64 { Int64(origin + (Date().timeIntervalSince1970 - origin) * scale) }
    public func realSeconds(until time: Int64) -> Double {
        (Double(time) - (origin + (Date().timeIntervalSince1970 - origin) * scale)) / scale
    }
}
