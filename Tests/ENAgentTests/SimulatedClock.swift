import ENAgent
import Synchronization

/// A clock the test moves by hand.
final class SimulatedClock: AgentClock {
    private let time: Mutex<Int64>

    init(_ start: Int64) { time = Mutex(start) }

    var now: Int64 { time.withLock { $0 } }

    func realSeconds(until time: Int64) -> Double { Double(time - now) }

    func advance(by seconds: Int64) { time.withLock { $0 += seconds } }
}
