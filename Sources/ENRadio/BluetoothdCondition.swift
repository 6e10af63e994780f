import Dispatch
import ENAgent
import ENBlueZ
import ENStore

/// What the radio learnt of a run of bluetoothd, which outlasts the radio's own run and the
/// process: each start and each resume builds a new `BlueZRadio`, and a new one asked a stalled
/// bluetoothd anew, three calls left unanswered for 10 s each (make test's RootCanal crowd,
/// 2026-11-30: b's resume scanned again after 21.4 s, a's new process after 31.5–35 s). One per
/// process, on the radio's queue, which every run's radio shares; the radio of the moment is its
/// one reader and writer; the store keeps it for the next process (`StoreSettings.stalledBluetoothd`).
/// The stall is tied to the run of bluetoothd that stalled (`BlueZAdapters.serviceOwner`): one
/// restarted since is asked anew.
public final class BluetoothdCondition: Sendable {
    /// bluetoothd's discovery does not scan (`BlueZRadio.DiscoveryStall`): `owner` is that run of
    /// bluetoothd as the bus names it (`BlueZAdapters.serviceOwner`; nil when the bus did not say),
    /// `adapter` the one it offered last.
    struct Stall: Equatable {
        let owner: String?
        let adapter: Adapter
    }

    private let stall: QueueBound<Stall?>
    private let store: (any SettingStore)?

    /// `queue`: the radio's, for every run; `store`: where the stall an earlier process noted is
    /// read from, and this one's is written (a store that cannot be read or written leaves the next
    /// process to ask bluetoothd anew, which costs time only).
    public init(queue: DispatchQueue, store: (any SettingStore)? = nil) {
        let kept = try? store?.value(StoreSettings.stalledBluetoothd)
        stall = QueueBound(kept.map { Stall(owner: $0.owner, adapter: Adapter(path: BlueZ.adapterPath($0.adapter), address: $0.address, powered: false, canAdvertise: true)) },
                           queue: queue)
        self.store = store
    }

    public var queue: DispatchQueue { stall.queue }

    /// The stall noted of bluetoothd, nil while its discovery is taken to scan.
    var stalled: Stall? { stall.value }

    /// Notes the stall, or that there is none, here and in the store; a stall whose bluetoothd
    /// the bus did not name is not kept there, since a later bluetoothd could not be told from it.
    func note(_ stall: Stall?) {
        guard stall != self.stall.value else { return }
        self.stall.value = stall
        let kept = stall.flatMap { stall in stall.owner.map { StalledBluetoothd(owner: $0, adapter: stall.adapter.name, address: stall.adapter.address) } }
        try? store?.set(StoreSettings.stalledBluetoothd, to: kept)
    }
}
