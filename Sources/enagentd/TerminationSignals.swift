import Dispatch
import FoundationEssentials
import Glibc

/// SIGTERM and SIGINT delivered as a byte on a pipe.
///
/// The handler is installed synchronously and the pipe keeps the byte until the queue reads it,
/// so a signal that arrives early (systemd may stop a unit right after READY=1) is never lost,
/// unlike with a dispatch signal source, which registers itself asynchronously.
enum TerminationSignals {
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Calls `handler` on `queue` once a termination signal arrives. Keep the returned source.
    static func handle(on queue: DispatchQueue, _ handler: @escaping () -> Void) -> any DispatchSourceRead {
        var ends: [Int32] = [-1, -1]
        // The write end never blocks: a flood of signals must not hang the handler.
        guard pipe(&ends) == 0, fcntl(ends[1], F_SETFL, O_NONBLOCK) == 0 else {
            fatalError("cannot create the signal pipe: \(String(cString: strerror(errno)))")
        }
        writeEnd = ends[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte: UInt8 = 1
            _ = write(TerminationSignals.writeEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for number in [SIGTERM, SIGINT] { sigaction(number, &action, nil) }
        let source = DispatchSource.makeReadSource(fileDescriptor: ends[0], queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
        return source
    }
}
