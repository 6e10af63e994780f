import Dispatch

/// Work started on another thread at once, its result (or error) taken when needed.
final class BackgroundWork<Value: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the worker before `done` is signalled, read after waiting for it.
    private var outcome: Result<Value, any Error>?

    init(_ work: @escaping @Sendable () throws -> Value) {
        DispatchQueue.global().async {
            self.outcome = Result(catching: work)
            self.done.signal()
        }
    }

    func result() throws -> Value {
        done.wait()
        return try outcome!.get()
    }
}
