import ENAgent
import ENBlueZ

/// What the radio has in the kernel, as phases, each changed only by `BlueZRadio`'s
/// `enter(_:because:)`.
extension BlueZRadio {
    /// The agent's advertisement in the kernel: an instance of its own on an adapter.
    struct Advertisement: CustomStringConvertible {
        var instance: UInt8
        var adapter: Adapter
        /// The controller has only the legacy commands: one advertising set.
        var legacy: Bool

        var description: String { "instance \(instance) on \(adapter.name)" }
    }

    /// Where the advertisement is, changed only by `enter(_:because:)` (docs/architecture.md,
    /// "The radio's phases", draws the transitions).
    indirect enum AdvertisementPhase: CustomStringConvertible {
        case none
        /// A new advertisement is being put in place of the one `previous` had, which is still in
        /// the kernel and this radio's to withdraw: should the new one fail before it is removed,
        /// `previous` is the phase again (the kernel would enable it again at power-on, from a new
        /// address). Nothing of the new one is in the kernel yet.
        case replacing(AdvertisementPhase)
        /// Its parameters given, its data not yet: nothing of it on the air. What the kernel said
        /// before the reply numbered `since` (the settings read first) the reads saw already.
        case adding(Advertisement, since: PacketNumber)
        case onAir(Advertisement)
        /// The adapter turned connectable (the kernel re-programs the advertisement from the
        /// public address), or another program's advertisement joined it on a legacy controller
        /// (the kernel puts that on the one set next): it goes, by `advertise` when it was being
        /// added, else by the agent's `stopAdvertising`.
        case unfit(Advertisement, Failure)

        /// This radio's instance in the kernel, when it has one it must withdraw.
        var advertisement: Advertisement? {
            switch self {
            case .none: return nil
            case .replacing(let previous): return previous.advertisement
            case .adding(let advertisement, _), .onAir(let advertisement), .unfit(let advertisement, _): return advertisement
            }
        }

        /// What the agent sees of it.
        var shown: RadioActivity.Advertisement {
            switch self {
            case .none: return .none
            case .replacing, .adding: return .adding
            case .onAir: return .onAir
            case .unfit: return .unfit
            }
        }

        /// The advertisement the kernel has enabled (an unfit one until it is withdrawn).
        var onAir: Advertisement? {
            switch self {
            case .onAir(let advertisement), .unfit(let advertisement, _): return advertisement
            case .none, .replacing, .adding: return nil
            }
        }

        var description: String {
            switch self {
            case .none: return "none"
            case .replacing(let previous): return "replacing \(previous)"
            case .adding(let advertisement, _): return "adding \(advertisement)"
            case .onAir(let advertisement): return "on the air, \(advertisement)"
            case .unfit(let advertisement, let failure): return "unfit, \(advertisement): \(failure)"
            }
        }
    }

    /// What the scan does, changed only by `enter(_:because:)` (docs/architecture.md, "The
    /// radio's phases").
    enum ScanPhase: CustomStringConvertible {
        case idle
        /// A kernel advertisement monitor, added by the reply numbered `added`: a removal read
        /// before it was of the monitor before with the same handle. A scan stops at most one
        /// discovery bluetoothd may still run for the agent (`stoppedADiscovery`, BlueZRadio's
        /// `stopStaleDiscovery`).
        case passive(Adapter, monitor: UInt16, added: PacketNumber, stoppedADiscovery: Bool)
        /// bluetoothd's discovery, which the kernel said runs (its Discovering event).
        case active(Adapter)
        /// bluetoothd answered StartDiscovery; the kernel has not said yet that a discovery runs
        /// (`startScan` waits for its word: a stalled bluetoothd answers without scanning).
        case discoveryStarting(Adapter)
        /// An active scan waits for this radio's advertisement to be on the adapter (`startScan`).
        case waitingForAdvertisement(Adapter)
        /// Stopped while a legacy controller takes an advertisement's new address (`pausingScan`).
        case paused(Adapter)
        /// The agent ended the scan, and its stop has not returned: what the kernel reports
        /// meanwhile is the scan's. A stalled bluetoothd leaves StopDiscovery unanswered for 10 s
        /// (BlueZRadio's `stopScanning`).
        case stopping(Adapter)

        /// What the agent sees of it: a scan runs once the kernel took its monitor or said its
        /// discovery runs.
        var shown: RadioActivity.Scan {
            switch self {
            case .idle: return .idle
            case .passive, .active: return .running
            case .discoveryStarting: return .starting
            // Not shown as running: the kernel may have ended the discovery while bluetoothd
            // leaves the stop unanswered for 10 s (make test's crowd of 2026-12-01 11:27: a status
            // poll in those 10 s said Scanning while hci1 ran no scan).
            case .stopping: return .idle
            case .waitingForAdvertisement: return .waitingForAdvertisement
            case .paused: return .paused
            }
        }

        var waitsForAdvertisement: Bool {
            if case .waitingForAdvertisement = self { return true }
            return false
        }

        var adapter: Adapter? {
            switch self {
            case .idle: return nil
            case .passive(let adapter, _, _, _), .active(let adapter), .discoveryStarting(let adapter),
                 .waitingForAdvertisement(let adapter), .paused(let adapter), .stopping(let adapter):
                return adapter
            }
        }

        var description: String {
            switch self {
            case .idle: return "idle"
            case .passive(let adapter, let monitor, _, _): return "passive on \(adapter.name), monitor \(monitor)"
            case .active(let adapter): return "active on \(adapter.name)"
            case .discoveryStarting(let adapter): return "bluetoothd's discovery starting on \(adapter.name)"
            case .waitingForAdvertisement(let adapter): return "waiting on \(adapter.name) for the advertisement"
            case .paused(let adapter): return "paused on \(adapter.name)"
            case .stopping(let adapter): return "stopping on \(adapter.name)"
            }
        }
    }
}
