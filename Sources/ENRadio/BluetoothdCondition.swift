import Dispatch
import ENAgent
import ENBlueZ

/// What the radio learnt of a run of bluetoothd, which outlasts the radio's own run: each start
/// and each resume builds a new `BlueZRadio`, and a new one asked a stalled bluetoothd anew, three
/// calls left unanswered for 10 s each (make test's RootCanal crowd, 2026-11-30: b's resume
/// scanned again after 21.4 s). One per process, on the radio's queue, which every run's radio
/// shares; the radio of the moment is its one reader and writer. The stall is tied to
/// bluetoothd's unique bus name: a bluetoothd that restarted while no radio ran is asked anew.
public final class BluetoothdCondition: Sendable {
    /// bluetoothd's discovery does not scan (`BlueZRadio.DiscoveryStall`): `owner` is the unique
    /// bus name of that bluetoothd (nil when the bus did not say), `adapter` the one it offered last.
    struct Stall: Equatable {
        let owner: String?
        let adapter: Adapter
    }

    private let stall: QueueBound<Stall?>

    /// `queue`: the radio's, for every run.
    public init(queue: DispatchQueue) {
        stall = QueueBound(nil, queue: queue)
    }

    public var queue: DispatchQueue { stall.queue }

    /// The stall noted of bluetoothd, nil while its discovery is taken to scan.
    var stalled: Stall? { stall.value }

    func note(_ stall: Stall?) { self.stall.value = stall }
}
