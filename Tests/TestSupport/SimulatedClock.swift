import ENAgent
import Synchronization

/// A clock the test moves by hand: `advance` lets time pass, `step` sets the wall clock only,
/// `sleep` passes time with the machine suspended.
public final class SimulatedClock: AgentClock {
    private let time: Mutex<(wall: Int64, steady: Double, awake: Double)>

    public init(_ start: Int64) { time = Mutex((start, 0, 0)) }

    public var now: Int64 { time.withLock { $0.wall } }
    public var steadySeconds: Double { time.withLock { $0.steady } }
    public var awakeSeconds: Double { time.withLock { $0.awake } }

    public func realSeconds(until time: Int64) -> Double { Double(time - now) }

    public func advance(by seconds: Int64) { time.withLock { $0.wall += seconds; $0.steady += Double(seconds); $0.awake += Double(seconds) } }

    public func step(by seconds: Int64) { time.withLock { $0.wall += seconds } }

    public func sleep(for seconds: Int64) { time.withLock { $0.wall += seconds; $0.steady += Double(seconds) } }
}
