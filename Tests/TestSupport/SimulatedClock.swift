import ENAgent
import Synchronization

/// A clock the test moves by hand: `advance` lets time pass, `step` sets the wall clock only.
public final class SimulatedClock: AgentClock {
    private let time: Mutex<(wall: Int64, steady: Double)>

    public init(_ start: Int64) { time = Mutex((start, 0)) }

    public var now: Int64 { time.withLock { $0.wall } }
    public var steadySeconds: Double { time.withLock { $0.steady } }

    public func realSeconds(until time: Int64) -> Double { Double(time - now) }

    public func advance(by seconds: Int64) { time.withLock { $0.wall += seconds; $0.steady += Double(seconds) } }

    public func step(by seconds: Int64) { time.withLock { $0.wall += seconds } }
}
