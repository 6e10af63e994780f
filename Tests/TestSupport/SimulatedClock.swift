import ENAgent
import Synchronization

/// A clock the test moves by hand: `advance` lets time pass, `step` sets the wall clock only.
final class SimulatedClock: AgentClock {
    private let time: Mutex<(wall: Int64, steady: Double)>

    init(_ start: Int64) { time = Mutex((start, 0)) }

    var now: Int64 { time.withLock { $0.wall } }
    var steadySeconds: Double { time.withLock { $0.steady } }

    func realSeconds(until time: Int64) -> Double { Double(time - now) }

    func advance(by seconds: Int64) { time.withLock { $0.wall += seconds; $0.steady += Double(seconds) } }

    func step(by seconds: Int64) { time.withLock { $0.wall += seconds } }
}
