import Dispatch

/// Tells whether the system clock has been set from a trusted source (NTP and the like).
public protocol ClockSynchronisation: Sendable {
    var isSynchronised: Bool { get }
}

/// Holds the agent back until the clock can be trusted: a key made under a wrong date is
/// published under that date, and sightings stamped with it match nobody. A Raspberry Pi without
/// a real-time clock boots in 1970 or at the time it was last shut down.
public final class ClockGate: Sendable {
    /// No clock reading before this release (2026-01-01) can be right.
    public static let earliestPlausibleTime: Int64 = 1_767_225_600

    private let synchronisation: (any ClockSynchronisation)?
    private let clock: any AgentClock
    private let recheckSeconds: Double
    private let queue: DispatchQueue
    /// The recheck while the gate is shut.
    private let timer: QueueBound<(any DispatchSourceTimer)?>

    /// With `synchronisation` nil (configured so, for machines without NTP) only an
    /// implausible clock is refused.
    public init(synchronisation: (any ClockSynchronisation)?, clock: any AgentClock, recheckSeconds: Double = 5, queue: DispatchQueue) {
        self.synchronisation = synchronisation
        self.clock = clock
        self.recheckSeconds = recheckSeconds
        self.queue = queue
        timer = QueueBound(nil, queue: queue)
    }

    public var isOpen: Bool {
        clock.now >= Self.earliestPlausibleTime && (synchronisation?.isSynchronised ?? true)
    }

    /// Runs `action` on the queue as soon as the clock can be trusted: at once if it can.
    public func whenOpen(_ action: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            guard !isOpen else { return action() }
            let recheck = DispatchSource.makeTimerSource(queue: queue)
            recheck.schedule(deadline: .now() + recheckSeconds, repeating: recheckSeconds)
            recheck.setEventHandler { [self] in
                guard isOpen else { return }
                timer.value?.cancel()
                timer.value = nil
                action()
            }
            timer.value = recheck
            recheck.resume()
        }
    }
}
