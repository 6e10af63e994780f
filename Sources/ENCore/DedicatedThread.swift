import Glibc

/// A thread of its own, for work that must not wait for a free thread of Dispatch's pool (on a
/// one-core Pi the pool may have none to spare while its caller blocks on the work).
public final class DedicatedThread: Sendable {
    private let thread: pthread_t

    /// Starts `body` on a new thread.
    public init(_ body: @escaping @Sendable () -> Void) {
        final class Start {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(body)).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body()
            return nil
        }, start)
        // Only a process out of threads or memory gets here; it cannot go on without this one.
        precondition(result == 0, "cannot start a thread: \(String(cString: strerror(result)))")
        self.thread = thread
    }

    /// Whether the caller runs on this thread.
    public var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// Waits for the thread's body to return. Call it (or `detach`) once, from another thread.
    public func join() {
        pthread_join(thread, nil)
    }

    /// Lets the thread end by itself, for a caller that cannot wait for it (the thread itself).
    public func detach() {
        pthread_detach(thread)
    }
}
