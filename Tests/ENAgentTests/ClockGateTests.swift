import Dispatch
import ENAgent
import Synchronization
import TestSupport
import Testing

final class SwitchableSynchronisation: ClockSynchronisation {
    let state = Mutex(false)
    var isSynchronised: Bool { state.withLock { $0 } }
}

struct ClockGateTests {
    let queue = DispatchQueue(label: "clock-gate-test")

    @Test func refusesAnImplausibleClockEvenWithoutSynchronisation() {
        let bootedIn1970 = SimulatedClock(86_400)
        #expect(!ClockGate(synchronisation: nil, clock: bootedIn1970, queue: queue).isOpen)
        let now = SimulatedClock(ClockGate.earliestPlausibleTime + 1)
        #expect(ClockGate(synchronisation: nil, clock: now, queue: queue).isOpen)
    }

    @Test func waitsForSynchronisationThenRunsOnce() {
        let synchronisation = SwitchableSynchronisation()
        let gate = ClockGate(synchronisation: synchronisation, clock: SimulatedClock(ClockGate.earliestPlausibleTime + 1),
                             recheckSeconds: 0.01, queue: queue)
        let runs = Mutex(0)
        let opened = DispatchSemaphore(value: 0)
        gate.whenOpen {
            runs.withLock { $0 += 1 }
            opened.signal()
        }
        #expect(opened.wait(timeout: .now() + 0.1) == .timedOut, "the clock is not synchronised yet")
        synchronisation.state.withLock { $0 = true }
        #expect(opened.wait(timeout: .now() + 5) == .success)
        queue.sync {}
        #expect(runs.withLock { $0 } == 1)
    }
}
