import Dispatch
import ENAgent
import ENBlueZ
import ENCore
import ENRadio
import ENStore
import Synchronization
import TestSupport

/// The radio agent's part, played step by step: what RadioAgent asks of its radio at a rotation,
/// a loss, a return, a sleep and at what the radio tells it, without its timers. It calls the radio
/// on the radio's queue, as the agent does.
final class RadioDriver {
    let kernel: KernelModel
    let bluetoothd: BluetoothdModel
    let radio: BlueZRadio
    let listener = ListenerLog()
    private var watch: (any ManagementWatch)?
    /// What the agent's status says: advertising, or the problem that keeps it from it, which is
    /// the radio's to say: the status's own derivation (`RadioState`) of the radio's activity, for
    /// an agent that wants an advertisement and has no reason of its own to hold off.
    private(set) var advertising = false
    var problem: AgentStatus? {
        onQueue { RadioState(activity: radio.activity, advertiser: .offAir, scan: .stopped, storeFailing: false).problem }
    }
    /// The agent wants a scan (RadioAgent's `ScanState.started`).
    private var scanStarted = false
    /// What the agent's status says of the scan: wanted, and run by the radio (`RadioState`).
    var scanning: Bool { scanStarted && onQueue { radio.activity.scan } == .running }
    /// Everything the radio told the agent, in order.
    private(set) var heard = [ListenerLog.Heard]()
    /// The service data of every advertisement the radio accepted.
    private(set) var advertised = [[UInt8]]()
    /// The TX power the radio gave each advertisement's metadata (`Radio.advertise`), in order.
    private(set) var transmitPowers = [Int8?]()
    private var generator: SeededGenerator

    /// `store` is the agent's database, which a restarted agent (a new driver) finds as it was;
    /// `bluetoothd` and `condition` are those of an earlier radio run in the same process.
    init(kernel: KernelModel, store: MemorySettings = MemorySettings(), seed: UInt64 = 1, scanMode: BlueZRadio.ScanMode = .active,
         bluetoothd: BluetoothdModel? = nil, condition: BluetoothdCondition? = nil, adapter: AdapterChoice? = nil) {
        self.kernel = kernel
        self.bluetoothd = bluetoothd ?? BluetoothdModel(kernel: kernel)
        generator = SeededGenerator(seed: seed)
        let kernel = kernel
        radio = BlueZRadio(client: self.bluetoothd, management: kernel, adapter: adapter, mayPowerOn: true, scanMode: scanMode, store: store,
                           logger: LogCapture().logger(), queue: condition?.queue ?? DispatchQueue(label: "radio driver"), bluetoothd: condition,
                           killSwitch: { _ in kernel.snapshot.blocked ? .soft : nil }, leConnectionBeingMade: { _ in kernel.snapshot.connecting },
                           pause: { _ in kernel.advance(seconds: 0.05) }, uptime: { kernel.snapshot.seconds }, channelTransmitPower: { _ in try kernel.readChannelTransmitPower() })
        let (radio, listener) = (radio, listener)
        watch = radio.queue.sync { radio.watchManagement(for: listener, logger: LogCapture().logger()) }
        _ = try? radio.follow(for: listener, logger: LogCapture().logger())
    }

    /// Runs `body` on the radio's queue, as the agent calls its radio.
    func onQueue<T>(_ body: () throws -> T) rethrows -> T { try radio.queue.sync(execute: body) }

    /// A rotation: a fresh identifier, as RadioAgent.rotate asks for one.
    func rotate() {
        let serviceData = (0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) }
        do {
            let power = try onQueue {
                var given: Int8??
                try radio.advertise { power in
                    given = power
                    return serviceData
                }
                return given
            }
            advertising = true
            transmitPowers += power.map { [$0] } ?? []
            advertised.append(serviceData)
        } catch is any RadioPostponement {
            // The previous advertisement stays on the air, and the status with it.
        } catch {
            advertising = false
        }
    }

    /// Hands the kernel's events to the radio and acts on what it tells the agent, until quiet.
    func settle() {
        while true {
            kernel.deliver()
            // What bluetoothd's signals brought onto the radio's queue.
            onQueue {}
            let heard = listener.take()
            guard !heard.isEmpty else { return }
            self.heard += heard
            for event in heard {
                switch event {
                case .removed where advertising:
                    // RadioAgent.advertisementRemoved: off the air until the rotation puts one on.
                    advertising = false
                    rotate()
                case .unfit(let unfit) where advertising:
                    stopAdvertising()
                    // RadioAgent ends its scan for another program's turn on a legacy set, and scans
                    // anew after the pause (here at once): the radio holds it for the advertisement.
                    if unfit.entry.scanYieldsToOthers && scanning {
                        stopScan()
                        startScan()
                    }
                // RadioAgent.scanStopped: a new scan at once.
                case .scanStopped where scanStarted:
                    scanStarted = false
                    startScan()
                default:
                    break
                }
            }
        }
    }

    func stopAdvertising() {
        try? onQueue { try radio.stopAdvertising() }
        advertising = false
    }

    /// RadioAgent.radioLost.
    func lost() {
        stopAdvertising()
        // A scan that waits for the advertisement waits on.
        if onQueue({ radio.activity.scan }) != .waitingForAdvertisement { scanStarted = false }
    }

    /// RadioAgent.radioReturned (after its 0.3 s): advertising anew, and scanning.
    func returned() {
        rotate()
        startScan()
    }

    /// RadioAgent's retry every second while it cannot advertise.
    func retry() {
        if !advertising { rotate() }
        if !scanStarted { startScan() }
    }

    func startScan() {
        do {
            try onQueue { try radio.startScanning() }
            scanStarted = true
        } catch {
            scanStarted = false
        }
    }

    func stopScan() {
        try? onQueue { try radio.stopScanning() }
        scanStarted = false
    }

    /// Three phones heard in the scan that runs, then the next scan, as the agent's cycle goes.
    func scanHearingPhones() {
        (1...3).forEach { bluetoothd.phoneHeard(Array(repeating: UInt8($0), count: 20)) }
        settle()
        stopScan()
        startScan()
        settle()
    }

    /// RadioAgent.prepareForSleep, then the sleep: the controller goes off and comes back.
    func sleep() {
        stopAdvertising()
        stopScan()
    }

    /// The agent's run ends (a pause, as RadioAgent.stop, then RadioRun's release): the
    /// advertisement and the scan stop, the radio ends its run, and it hears the kernel no more,
    /// for the next run's radio to, unless it asks to watch on for a while (a stall noted): then
    /// until the next run's radio watches or the test ends.
    func endRun() {
        stopAdvertising()
        stopScan()
        guard onQueue({ radio.endRun() }) == nil else { return }
        watch?.cancel()
        watch = nil
    }

    deinit { watch?.cancel() }
}

/// The radio's settings in memory.
final class MemorySettings: RadioAgentStore {
    private let settings = Mutex<[String: String]>([:])
    func setting(_ name: String) throws(StoreError) -> String? { settings.withLock { $0[name] } }
    func setSetting(_ name: String, to value: String?) throws(StoreError) { settings.withLock { $0[name] = value } }
    func record(_ sightings: MergedSightings, scans: [ClosedRange<Int64>]) throws(StoreError) {}
}

/// SplitMix64: the same sequence from the same seed, so that a failure replays.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
