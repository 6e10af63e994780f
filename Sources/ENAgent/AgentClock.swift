import FoundationEssentials
import Glibc

/// Where the agent reads the time, so tests can run days in milliseconds.
public protocol AgentClock: Sendable {
    /// Unix seconds.
    var now: Int64 { get }
    /// Seconds, on this clock's scale, from a source that is never stepped (boot time, suspend
    /// included): what tells a step of the wall clock from time passing.
    var steadySeconds: Double { get }
    /// Seconds, on this clock's scale, that the machine was awake (not counting suspend): the
    /// steady clock running ahead of it tells a suspend, through which no timer fires.
    var awakeSeconds: Double { get }
    /// Real seconds until this clock reads `time`, for timers.
    func realSeconds(until time: Int64) -> Double
}

/// The system's wall clock.
public struct SystemClock: AgentClock {
    public init() {}
    public var now: Int64 { Int64(Date().timeIntervalSince1970) }
    public var steadySeconds: Double { bootTime() }
    public var awakeSeconds: Double { monotonicTime() }
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
    public var steadySeconds: Double { bootTime() * scale }
    public var awakeSeconds: Double { monotonicTime() * scale }
    public func realSeconds(until time: Int64) -> Double {
        (Double(time) - (origin + (Date().timeIntervalSince1970 - origin) * scale)) / scale
    }
}

/// CLOCK_BOOTTIME in seconds: monotonic, and counting a suspended laptop's sleep, which the wall
/// clock counts too.
private func bootTime() -> Double { seconds(of: CLOCK_BOOTTIME) }

/// CLOCK_MONOTONIC in seconds: stands still while the machine sleeps.
private func monotonicTime() -> Double { seconds(of: CLOCK_MONOTONIC) }

private func seconds(of clock: clockid_t) -> Double {
    var time = timespec()
    clock_gettime(clock, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
