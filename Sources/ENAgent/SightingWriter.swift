import Dispatch
import ENCore
import ENStore

/// Writes the radio agent's sightings and scans to the store on a queue of its own, so that no
/// write holds up the radio's events. In the RootCanal crowd a scan's write took 1.4 s (3,208
/// sightings, TCG on a loaded host), and the kernel's word that the adapter had turned
/// connectable waited behind it on the agent's queue: the identifier went out in connectable
/// PDUs for as long. What the store refuses waits here, in the order heard, for the next write.
final class SightingWriter: Sendable {
    /// What a write came to, for the agent's status and journal.
    enum Outcome: Sendable {
        /// Everything held is written: so many sightings and scans, and the sightings dropped
        /// from memory since the last write that succeeded.
        case written(sightings: Int, scans: Int, dropped: Int)
        /// The store refused; `held` sightings wait in memory for the next write.
        case refused(StoreError, held: Int)
    }

    /// What the store has not taken yet, on the writer's queue only.
    private struct Unwritten {
        var sightings = MergedSightings()
        var scans = [ClosedRange<Int64>]()
        var dropped = 0
    }

    /// Sightings held in memory at most while the store cannot be written (about 3 MB at 15
    /// receptions each, 104 bytes a sighting and 3 a reception; at most about 17 MB); the oldest
    /// go first beyond it.
    static let maximumHeld = 20_000
    /// Ended scans held in memory at most while the store cannot be written: a month of the
    /// standard schedule (one scan every 5 minutes); the oldest go first beyond it.
    static let maximumHeldScans = 31 * 24 * 12

    private let store: any RadioAgentStore
    private let unwritten: QueueBound<Unwritten>

    init(store: any RadioAgentStore) {
        self.store = store
        unwritten = QueueBound(Unwritten(), queue: DispatchQueue(label: "enagent.sightings"))
    }

    /// Writes `sightings` and `scans` after what waits already, all in one transaction, and tells
    /// `outcome` how it went (on the writer's queue).
    func write(_ sightings: MergedSightings, scans: [ClosedRange<Int64>], outcome: @escaping @Sendable (Outcome) -> Void) {
        unwritten.queue.async { [self] in
            hold(sightings, scans: scans)
            let held = unwritten.value
            do throws(StoreError) {
                try store.record(held.sightings, scans: held.scans)
                unwritten.value = Unwritten()
                outcome(.written(sightings: held.sightings.count, scans: held.scans.count, dropped: held.dropped))
            } catch {
                outcome(.refused(error, held: held.sightings.count))
            }
        }
    }

    /// Runs `body` once every write handed over before it is done.
    func afterWrites(_ body: @escaping @Sendable () -> Void) {
        unwritten.queue.async(execute: body)
    }

    /// Returns once every write handed over before is done; a write that hangs never returns,
    /// which is what the watchdog is for.
    func drain() {
        unwritten.queue.sync {}
    }

    private func hold(_ sightings: MergedSightings, scans: [ClosedRange<Int64>]) {
        unwritten.value.sightings.append(contentsOf: sightings)
        unwritten.value.scans += scans
        let excess = unwritten.value.sightings.count - Self.maximumHeld
        if excess > 0 {
            // A tenth more, so that a long outage does not move the whole array per write.
            let dropped = excess + Self.maximumHeld / 10
            unwritten.value.dropped += dropped
            unwritten.value.sightings.removeFirst(dropped)
        }
        if unwritten.value.scans.count > Self.maximumHeldScans {
            unwritten.value.scans.removeFirst(unwritten.value.scans.count - Self.maximumHeldScans)
        }
    }
}
