import Dispatch

/// A value that lives on one serial queue: read and changed on that queue only, which every access
/// checks (`dispatchPrecondition`, in release builds too), in the spirit of swift-nio's
/// `NIOLoopBound`. A type that keeps its mutable state in one of these and everything else in
/// `let`s of Sendable types is Sendable as the compiler checks it.
///
/// Sendable by hand: the value never leaves its queue, since no access from another thread passes
/// the precondition.
public final class QueueBound<Value>: @unchecked Sendable {
    public let queue: DispatchQueue
    private var confined: Value

    /// Made on any thread: the value is handed over before any other thread can see it.
    public init(_ value: Value, queue: DispatchQueue) {
        self.queue = queue
        confined = value
    }

    public var value: Value {
        get {
            dispatchPrecondition(condition: .onQueue(queue))
            return confined
        }
        _modify {
            dispatchPrecondition(condition: .onQueue(queue))
            yield &confined
        }
    }
}
