import ENAgent
import ENBlueZ
import ENBus
import Synchronization

/// The agent's radio: the adapter and discovery through bluetoothd, the advertisement through
/// the kernel's management interface.
///
/// bluetoothd 5.66 cannot send the EN advertisement as the specification has it: it refuses
/// Flags on a non-connectable (broadcast) advertisement and ignores MinInterval/MaxInterval
/// outside experimental mode, so its advertisements went out at 1280 ms without Flags. The
/// management interface takes the interval and the exact AD bytes per instance.
/// enagentd uses the adapter's highest instance (bluetoothd hands out the lowest first) and adds
/// it again whenever bluetoothd returns (bluetoothd clears every instance when it starts). No
/// instance timeout (see AddExtendedAdvertisingParameters): with one, the lab's advertisements
/// ended after about a second.
final class BlueZRadio: Radio {
    enum Failure: RadioProblemError, CustomStringConvertible {
        case noAdapter(String?)
        case poweredOff(String)
        case connectable(String)
        case cannotAdvertise(String)

        var description: String {
            switch self {
            case .noAdapter(let name?): return "BlueZ has no adapter \(name)"
            case .noAdapter(nil): return "BlueZ has no LE adapter"
            case .poweredOff(let name): return "the adapter \(name) is powered off (set power-on to let enagentd switch it on)"
            case .connectable(let name):
                return "not advertising: \(name) is connectable, so the kernel would send the identifier in connectable PDUs "
                    + "from the adapter's own address, which links every RPI; switch it off with 'btmgmt --index \(name.dropFirst(3)) connectable off'"
            case .cannotAdvertise(let name): return "\(name) offers no advertising instance"
            }
        }

        var problem: RadioProblem {
            switch self {
            case .noAdapter, .cannotAdvertise: return .noAdapter
            case .poweredOff: return .bluetoothOff
            case .connectable: return .adapterConnectable
            }
        }
    }

    private let client: BlueZClient
    private let adapterName: String?
    private let mayPowerOn: Bool
    private let state = Mutex(State())

    private struct State {
        var advertisement: (instance: UInt8, adapter: Adapter)?
        var scanningAdapter: Adapter?
        /// The adapter chosen when none is configured, asked for by name from then on.
        var chosenAdapter: String?
    }

    init(client: BlueZClient, adapterName: String?, mayPowerOn: Bool) {
        self.client = client
        self.adapterName = adapterName
        self.mayPowerOn = mayPowerOn
    }

    /// The configured adapter, else the first that can advertise; powered on when allowed.
    func adapter() throws -> Adapter {
        let wanted = adapterName ?? state.withLock { $0.chosenAdapter }
        let found: Adapter?
        if let wanted {
            found = try client.adapter(named: wanted)
        } else {
            // Chosen once for the process's life: a restarting bluetoothd offers the adapters in
            // any order, not yet powered, and another adapter must not take over meanwhile.
            found = try client.adapters().first(where: \.canAdvertise)
            state.withLock { $0.chosenAdapter = found?.name }
        }
        guard var adapter = found else { throw Failure.noAdapter(wanted) }
        if !adapter.powered {
            guard mayPowerOn else { throw Failure.poweredOff(adapter.name) }
            try client.setPowered(adapter, true)
            adapter.powered = true
        }
        return adapter
    }

    func advertise(_ serviceData: (Int8?) throws -> [UInt8]) throws {
        stopAdvertising()
        let adapter = try adapter()
        guard let controller = adapter.index else { throw Failure.noAdapter(adapter.name) }
        let settings = try Management.send(ReadControllerInformation(), controller: controller)
        guard !settings.contains(.connectable) else { throw Failure.connectable(adapter.name) }
        let instance = try Management.send(ReadAdvertisingFeatures(), controller: controller).maximumInstances
        guard instance > 0 else { throw Failure.cannotAdvertise(adapter.name) }
        // A fresh instance, so the kernel gives it a fresh non-resolvable address.
        _ = try? Management.send(RemoveAdvertising(instance: instance), controller: controller)
        let interval = ExposureNotificationAdvertisement.intervalMilliseconds
        let parameters = try Management.send(AddExtendedAdvertisingParameters(
            instance: instance, flags: [.useInterval],
            interval: AddExtendedAdvertisingParameters.slots(milliseconds: interval.lowerBound)...AddExtendedAdvertisingParameters.slots(milliseconds: interval.upperBound),
            transmitPower: 0), controller: controller)
        state.withLock { $0.advertisement = (instance, adapter) }
        // 127 means the controller did not say (no extended advertising).
        let data = try serviceData(parameters.transmitPower == 127 ? nil : parameters.transmitPower)
        try Management.send(AddExtendedAdvertisingData(
            instance: instance, advertisingData: ExposureNotificationAdvertisement.payload(serviceData: data, adapterRunsBREDR: settings.contains(.bredr))),
            controller: controller)
    }

    func stopAdvertising() {
        guard let (instance, adapter) = state.withLock({ state in defer { state.advertisement = nil }; return state.advertisement }),
              let controller = adapter.index else { return }
        _ = try? Management.send(RemoveAdvertising(instance: instance), controller: controller)
    }

    func startScanning() throws {
        let adapter = try adapter()
        try client.startDiscovery(on: adapter)
        state.withLock { $0.scanningAdapter = adapter }
    }

    func stopScanning() {
        guard let adapter = state.withLock({ state in defer { state.scanningAdapter = nil }; return state.scanningAdapter }) else { return }
        try? client.stopDiscovery(on: adapter)
        try? client.forgetDevices(on: adapter)
    }

    /// The name of the adapter in use (for reports), when one is known.
    var adapterInUse: String? { adapterName ?? state.withLock { $0.advertisement?.adapter.name ?? $0.scanningAdapter?.name } }
}
