import ENAgent
import ENBlueZ
import ENBus
import Synchronization

/// The agent's radio on BlueZ: one adapter, one advertisement at a time, discovery on demand.
final class BlueZRadio: Radio {
    enum Failure: RadioProblemError, CustomStringConvertible {
        case noAdapter(String?)
        case poweredOff(String)

        var description: String {
            switch self {
            case .noAdapter(let name?): return "BlueZ has no adapter \(name)"
            case .noAdapter(nil): return "BlueZ has no LE adapter"
            case .poweredOff(let name): return "the adapter \(name) is powered off (set power-on to let enagentd switch it on)"
            }
        }

        var problem: RadioProblem {
            switch self {
            case .noAdapter: return .noAdapter
            case .poweredOff: return .bluetoothOff
            }
        }
    }

    private let client: BlueZClient
    private let adapterName: String?
    private let mayPowerOn: Bool
    private let state = Mutex(State())

    private struct State {
        var advertisement: (Advertisement, Adapter)?
        var scanningAdapter: Adapter?
        var registrations = 0
    }

    init(client: BlueZClient, adapterName: String?, mayPowerOn: Bool) {
        self.client = client
        self.adapterName = adapterName
        self.mayPowerOn = mayPowerOn
    }

    /// The configured adapter, else the first that can advertise; powered on when allowed.
    func adapter() throws -> Adapter {
        let adapters = try client.adapters()
        guard var adapter = adapterName.map({ name in adapters.first { $0.name == name } }) ?? adapters.first(where: \.canAdvertise) else {
            throw Failure.noAdapter(adapterName)
        }
        if !adapter.powered {
            guard mayPowerOn else { throw Failure.poweredOff(adapter.name) }
            try client.setPowered(adapter, true)
            adapter.powered = true
        }
        return adapter
    }

    func advertise(_ serviceData: [UInt8]) throws {
        stopAdvertising()
        let adapter = try adapter()
        let number = state.withLock { state in
            state.registrations += 1
            return state.registrations
        }
        // A new object for every registration: bluetoothd then gives it a new random address.
        let advertisement = Advertisement(path: "/org/enagent/advertisement\(number)", serviceData: serviceData)
        try client.connection.export(advertisement.object)
        do {
            try client.register(advertisement, on: adapter)
        } catch {
            client.connection.withdraw(advertisement.object)
            throw error
        }
        state.withLock { $0.advertisement = (advertisement, adapter) }
    }

    func stopAdvertising() {
        guard let (advertisement, adapter) = state.withLock({ state in defer { state.advertisement = nil }; return state.advertisement }) else { return }
        if !advertisement.wasReleased { try? client.unregister(advertisement, on: adapter) }
        client.connection.withdraw(advertisement.object)
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
    var adapterInUse: String? { adapterName ?? state.withLock { $0.advertisement?.1.name ?? $0.scanningAdapter?.name } }
}
