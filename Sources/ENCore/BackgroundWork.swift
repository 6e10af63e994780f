import Dispatch
import Synchronization

/// Work started on another thread at once, its result (or error) taken when needed.
public final class BackgroundWork<Value: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let outcome = Mutex<Result<Value, any Error>?>(nil)

    public init(_ work: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global().async { [self] in
            let result = Result(catching: work)
            outcome.withLock { $0 = result }
            done.signal()
        }
    }

    /// Whether the work has ended (`result` returns at once).
    public var isDone: Bool { outcome.withLock { $0 != nil } }

    /// Whether the work ends within `timeout` (then `result` returns at once).
    public func ends(within timeout: DispatchTimeInterval) -> Bool {
        guard done.wait(timeout: .now() + timeout) == .success else { return false }
        done.signal()
        return true
    }

    public func result() throws -> Value {
        done.wait()
        return try outcome.withLock { $0! }.get()
    }
}
