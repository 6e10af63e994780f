/// A row of the database's setting table: its name, and how its value is written there as text.
/// Every setting the agent keeps is one of `StoreSettings`' members, so that one place lists what
/// the database holds beside its tables (docs/privacy.md).
public struct StoreSetting<Value: Sendable>: Sendable {
    public let name: String
    let encode: @Sendable (Value) -> String
    let decode: @Sendable (String) -> Value?
}

/// A number the kernel gave on one adapter: the radio's advertising instance, its scan monitor.
public struct AdapterNumber: Equatable, Sendable {
    public var adapter: String
    public var number: UInt16

    public init(adapter: String, number: UInt16) {
        self.adapter = adapter
        self.number = number
    }
}

/// A bluetoothd whose discovery the radio found not to scan, for the next enagentd process: who
/// owns org.bluez (a name no other run of bluetoothd has had on any run of the bus), and the
/// adapter it offered last, by name and address.
public struct StalledBluetoothd: Equatable, Sendable {
    public var owner: String
    public var adapter: String
    public var address: String

    public init(owner: String, adapter: String, address: String) {
        (self.owner, self.adapter, self.address) = (owner, adapter, address)
    }
}

/// Every setting the agent keeps.
public enum StoreSettings {
    /// When the pause `enctl pause` asked for ends, in Unix seconds (enagentd's consent and pause).
    public static let pausedUntil = StoreSetting<Int64>(name: "paused-until", encode: { String($0) }, decode: { Int64($0) })
    /// The EN interval number whose identifier the radio agent last put on the air: a restart
    /// within that interval never puts the same one out again.
    public static let advertisedInterval = StoreSetting<UInt32>(name: "advertised-interval", encode: { String($0) }, decode: { UInt32($0) })
    /// The exposure configuration of the last detection (JSON), which the v1 API's answers use.
    public static let exposureConfiguration = StoreSetting<String>(name: "exposure-configuration", encode: { $0 }, decode: { $0 })
    /// The last risk configuration (JSON) that was read and accepted: the one in force while the
    /// file is refused.
    public static let riskConfiguration = StoreSetting<String>(name: "risk-configuration", encode: { $0 }, decode: { $0 })
    /// The advertising instance the radio added last ("ADAPTER INSTANCE"): one a run killed left
    /// goes before the next advertisement.
    public static let advertisingInstance = adapterNumber("advertising-instance")
    /// The monitor of the radio's last passive scan ("ADAPTER HANDLE"): one a run killed left is
    /// removed, else the kernel would scan for it for good.
    public static let scanMonitor = adapterNumber("scan-monitor")
    /// The bluetoothd the radio found stalled ("ADAPTER ADDRESS OWNER"): a new process scans
    /// passively at once while that bluetoothd still runs, instead of asking it anew.
    public static let stalledBluetoothd = StoreSetting<StalledBluetoothd>(name: "stalled-bluetoothd", encode: { "\($0.adapter) \($0.address) \($0.owner)" }, decode: { text in
        let fields = text.split(separator: " ", maxSplits: 2)
        guard fields.count == 3 else { return nil }
        return StalledBluetoothd(owner: String(fields[2]), adapter: String(fields[0]), address: String(fields[1]))
    })

    /// Every setting's name (a test checks that each setting has a name of its own).
    public static let names = [pausedUntil.name, advertisedInterval.name, exposureConfiguration.name, riskConfiguration.name, advertisingInstance.name,
                               scanMonitor.name, stalledBluetoothd.name]

    private static func adapterNumber(_ name: String) -> StoreSetting<AdapterNumber> {
        StoreSetting(name: name, encode: { "\($0.adapter) \($0.number)" }, decode: { text in
            let fields = text.split(separator: " ")
            guard fields.count == 2, let number = UInt16(fields[1]) else { return nil }
            return AdapterNumber(adapter: String(fields[0]), number: number)
        })
    }
}

/// Settings by name, as the setting table keeps them; `value(_:)` and `set(_:to:)` are the typed
/// way in, through `StoreSettings`.
public protocol SettingStore: Sendable {
    func setting(_ name: String) throws(StoreError) -> String?
    /// Sets `name` to `value`; nil removes it.
    func setSetting(_ name: String, to value: String?) throws(StoreError)
    /// Sets `name` to `value` unless another write holds the store (a scan's sightings being
    /// written: seconds on a slow disk); false then, and nothing is set.
    /// A store whose writes never wait for each other sets it at once (the default).
    func setSettingUnlessBusy(_ name: String, to value: String?) throws(StoreError) -> Bool
}

extension SettingStore {
    /// The setting's value, nil when none is kept; a kept text that does not read as the setting's
    /// type is damage, not "none".
    public func value<Value>(_ setting: StoreSetting<Value>) throws(StoreError) -> Value? {
        guard let text = try self.setting(setting.name) else { return nil }
        guard let value = setting.decode(text) else { throw .malformedSetting(name: setting.name, value: text) }
        return value
    }

    /// Sets the setting to `value`; nil removes it.
    public func set<Value>(_ setting: StoreSetting<Value>, to value: Value?) throws(StoreError) {
        try setSetting(setting.name, to: value.map(setting.encode))
    }

    /// Sets the setting to `value` unless another write holds the store (`setSettingUnlessBusy`).
    public func setUnlessBusy<Value>(_ setting: StoreSetting<Value>, to value: Value?) throws(StoreError) -> Bool {
        try setSettingUnlessBusy(setting.name, to: value.map(setting.encode))
    }

    public func setSettingUnlessBusy(_ name: String, to value: String?) throws(StoreError) -> Bool {
        try setSetting(name, to: value)
        return true
    }
}

extension AgentStore: SettingStore {}
