import ENBus
import Synchronization

/// Calls BlueZ over D-Bus and follows what it announces. Blocking calls must not be made
/// from a signal handler (they run on the connection's dispatcher thread).
public final class BlueZClient: Sendable {
    public let connection: DBusConnection
    /// The EN devices bluetoothd announced, for the reports of their changes.
    private let devices = Mutex(DeviceReports())

    public init(connection: DBusConnection) {
        self.connection = connection
    }

    // MARK: Adapters

    /// The adapters BlueZ manages, by name.
    public func adapters() throws(DBusError) -> [Adapter] {
        let reply = try connection.call(destination: BlueZ.service, path: "/", interface: BlueZ.objectManagerInterface,
                                        member: "GetManagedObjects", timeout: BlueZ.callTimeout)
        guard let objects = reply.first?.stringKeyed else { return [] }
        return objects.compactMap { path, interfaces -> Adapter? in
            guard let interfaces = interfaces.stringKeyed, let adapter = interfaces[BlueZ.adapterInterface]?.stringKeyed else { return nil }
            return Adapter(path: path, address: adapter["Address"]?.string ?? "", powered: adapter["Powered"]?.bool ?? false,
                           canAdvertise: interfaces[BlueZ.advertisingManagerInterface] != nil)
        }.sorted { $0.name < $1.name }
    }

    /// One adapter by name (hci0), or nil when BlueZ has none of that name. It asks for that
    /// adapter's properties only: GetManagedObjects carries every device BlueZ has seen, which
    /// with a crowd around took bluetoothd over 10 s (the lab's crowd).
    public func adapter(named name: String) throws(DBusError) -> Adapter? {
        let path = BlueZ.adapterPath(name)
        let reply: [DBusValue]
        do {
            reply = try connection.call(destination: BlueZ.service, path: path, interface: ExportedObject.propertiesInterface, member: "GetAll",
                                        [.string(BlueZ.adapterInterface)], timeout: BlueZ.callTimeout)
        } catch where Self.notThere.contains(error.name) {
            return nil
        }
        let properties = reply.first?.stringKeyed ?? [:]
        return Adapter(path: path, address: properties["Address"]?.string ?? "", powered: properties["Powered"]?.bool ?? false, canAdvertise: true)
    }

    /// Whether bluetoothd offers advertising on the adapter named `name` (hci0): its
    /// LEAdvertisingManager1, which it registers as it sets the adapter up, once the kernel
    /// answered its Read Advertising Features (src/advertising.c, read_adv_features_callback).
    public func offersAdvertising(onAdapterNamed name: String) throws(DBusError) -> Bool {
        do {
            _ = try connection.call(destination: BlueZ.service, path: BlueZ.adapterPath(name), interface: ExportedObject.propertiesInterface, member: "GetAll",
                                    [.string(BlueZ.advertisingManagerInterface)], timeout: BlueZ.callTimeout)
            return true
        } catch where Self.notThere.contains(error.name) {
            return false
        }
    }

    /// What bluetoothd (its gdbus) answers for an object or an interface it does not have.
    private static let notThere = [DBusError.unknownObject, DBusError.unknownMethod, DBusError.invalidArgs, DBusError.unknownInterface]

    public func setPowered(_ adapter: Adapter, _ powered: Bool) throws(DBusError) {
        try connection.call(destination: BlueZ.service, path: adapter.path, interface: ExportedObject.propertiesInterface, member: "Set",
                            [.string(BlueZ.adapterInterface), .string("Powered"), .variant(.boolean(powered))], timeout: BlueZ.callTimeout)
    }

    // MARK: Discovery

    /// Discovery of LE advertisers of the EN service, with every report passed on: without a
    /// filter bluetoothd drops advertisers that carry no Flags, as broadcast EN beacons do.
    public func startDiscovery(on adapter: Adapter) throws(DBusError) {
        try connection.call(destination: BlueZ.service, path: adapter.path, interface: BlueZ.adapterInterface, member: "SetDiscoveryFilter",
                            [.properties(["Transport": .string("le"), "DuplicateData": .boolean(true),
                                          "UUIDs": .strings([BlueZ.exposureNotificationUUID])])], timeout: BlueZ.callTimeout)
        let start = { () throws(DBusError) -> Void in
            _ = try self.connection.call(destination: BlueZ.service, path: adapter.path, interface: BlueZ.adapterInterface,
                                     member: "StartDiscovery", timeout: BlueZ.callTimeout)
        }
        do {
            try start()
        } catch where error.name == BlueZ.inProgressError {
            // InProgress means either that our discovery runs already, or that the kernel refused
            // bluetoothd: it still runs the discovery of a bluetoothd that died (for up to 10.24 s).
            if try isDiscovering(adapter) { return }
            let stuck = "\(error.message): the kernel still runs the discovery of a bluetoothd that stopped"
            guard let index = adapter.index else { throw DBusError(name: error.name, message: stuck) }
            do { _ = try KernelManagement().send(StopDiscovery(), controller: index) } catch let refusal {
                throw DBusError(name: error.name, message: "\(stuck), and would not stop it: \(refusal)")
            }
            try start()
        }
    }

    /// bluetoothd's own view: whether it runs a discovery on `adapter`.
    public func isDiscovering(_ adapter: Adapter) throws(DBusError) -> Bool {
        let reply = try connection.call(destination: BlueZ.service, path: adapter.path, interface: ExportedObject.propertiesInterface,
                                        member: "Get", [.string(BlueZ.adapterInterface), .string("Discovering")], timeout: BlueZ.callTimeout)
        return reply.first?.bool ?? false
    }

    public func stopDiscovery(on adapter: Adapter) throws(DBusError) {
        try connection.call(destination: BlueZ.service, path: adapter.path, interface: BlueZ.adapterInterface,
                            member: "StopDiscovery", timeout: BlueZ.callTimeout)
    }

    /// Withdraws from bluetoothd's discovery without waiting for its answer (a stalled bluetoothd
    /// answers StopDiscovery after 10 s, if at all): while this connection is its client,
    /// bluetoothd starts the discovery again by itself whenever the kernel ends it. `read` runs
    /// (on the bus's thread) once bluetoothd has answered, whatever it answered, or has left the
    /// bus (the bus then answers for it); until then bluetoothd may still start the discovery for
    /// this client. The answer is awaited as long as that takes: the system bus times out no
    /// call (dbus-daemon's reply_timeout is "never" by default).
    public func leaveDiscovery(on adapter: Adapter, whenRead read: @escaping @Sendable () -> Void) throws(DBusError) {
        let message = try DBusMessage.methodCall(destination: BlueZ.service, path: adapter.path, interface: BlueZ.adapterInterface, member: "StopDiscovery")
        connection.call(message, timeout: BlueZ.noTimeout) { _ in read() }
    }

    /// Makes BlueZ forget the advertisers seen, so the next scan reports them afresh (BlueZ only
    /// reports a device again when something about it changes). The calls do not wait for their
    /// answers: with a crowd around, a round trip per device held up the radio's schedule for
    /// half a minute (the lab's crowd), and a device already gone needs no answer either.
    public func forgetDevices(on adapter: Adapter) throws(DBusError) {
        let paths = devices.withLock { $0.forget(under: adapter.path + "/dev_") }
        for path in paths {
            try connection.callWithoutReply(destination: BlueZ.service, path: adapter.path, interface: BlueZ.adapterInterface,
                                            member: "RemoveDevice", [.objectPath(path)])
        }
    }

    // MARK: Following BlueZ

    /// Reports every Device1 appearance or change that brings EN service data, or an RSSI of a
    /// device that carried it (`DeviceReports`).
    public func followDevices(_ handler: @escaping @Sendable (DeviceReport) -> Void) throws(DBusError) -> [SignalSubscription] {
        let added = try connection.subscribe(MatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, member: "InterfacesAdded")) {
            [weak self] message in
            let arguments = message.arguments
            guard let self, let path = arguments.first?.string,
                  let device = arguments.dropFirst().first?.stringKeyed?[BlueZ.deviceInterface]?.stringKeyed else { return }
            if let report = self.devices.withLock({ $0.appeared(path: path, properties: device) }) { handler(report) }
        }
        let changed = try connection.subscribe(MatchRule(sender: BlueZ.service, pathNamespace: "/org/bluez",
                                                         interface: ExportedObject.propertiesInterface, member: "PropertiesChanged",
                                                         arg0: BlueZ.deviceInterface)) { [weak self] message in
            let arguments = message.arguments
            guard let self, let path = message.path, let properties = arguments.dropFirst().first?.stringKeyed else { return }
            let invalidated = arguments.dropFirst(2).first?.elements?.compactMap(\.string) ?? []
            if let report = self.devices.withLock({ $0.changed(path: path, properties: properties, invalidated: invalidated) }) { handler(report) }
        }
        return [added, changed]
    }

    /// Which run of bluetoothd owns org.bluez now, as no other run has been named on any run of
    /// the bus: the bus's ID and the owner's unique name ("ID :1.42"); nil while none owns it. The
    /// bus answers, not bluetoothd: also while bluetoothd answers nothing.
    public func serviceOwner() throws(DBusError) -> String? {
        let owner: String?
        do {
            owner = try connection.callBus("GetNameOwner", [.string(BlueZ.service)], timeout: BlueZ.callTimeout).first?.string
        } catch where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
        let id = try connection.callBus("GetId", timeout: BlueZ.callTimeout)
        return owner.map { Self.serviceOwner(busID: id.first?.string ?? "", uniqueName: $0) }
    }

    /// Calls `handler` with the new owner of `org.bluez` (bluetoothd started or restarted), named
    /// as `serviceOwner` names it, and with nil when it loses its owner.
    public func followService(_ handler: @escaping @Sendable (_ owner: String?) -> Void) throws(DBusError) -> [SignalSubscription] {
        let id = try connection.callBus("GetId", timeout: BlueZ.callTimeout).first?.string ?? ""
        return [try connection.subscribe(MatchRule(sender: DBusConnection.bus.name, interface: DBusConnection.bus.interface,
                                                  member: "NameOwnerChanged", arg0: BlueZ.service)) { message in
            let owner = message.arguments.dropFirst(2).first?.string ?? ""
            handler(owner.isEmpty ? nil : Self.serviceOwner(busID: id, uniqueName: owner))
        }]
    }

    /// A run of bluetoothd as `serviceOwner` and `followService` name it: the bus's ID and the
    /// unique name bluetoothd has on it.
    static func serviceOwner(busID: String, uniqueName: String) -> String { "\(busID) \(uniqueName)" }

    /// Calls `handler` with each adapter that appears, vanishes or is powered on or off (not for
    /// the property changes that discovery itself causes), named as the kernel names it (hci0).
    public func followAdapters(_ handler: @escaping @Sendable (AdapterChange) -> Void) throws(DBusError) -> [SignalSubscription] {
        let appeared = try connection.subscribe(MatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, member: "InterfacesAdded")) { message in
            guard let path = message.arguments.first?.string, message.arguments.dropFirst().first?.stringKeyed?[BlueZ.adapterInterface] != nil else { return }
            handler(AdapterChange(adapter: Adapter.name(ofPath: path), kind: .appeared))
        }
        let vanished = try connection.subscribe(MatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, member: "InterfacesRemoved")) { message in
            guard let path = message.arguments.first?.string,
                  message.arguments.dropFirst().first?.elements?.contains(.string(BlueZ.adapterInterface)) == true else { return }
            handler(AdapterChange(adapter: Adapter.name(ofPath: path), kind: .vanished))
        }
        let powered = try connection.subscribe(MatchRule(sender: BlueZ.service, pathNamespace: "/org/bluez", interface: ExportedObject.propertiesInterface,
                                                         member: "PropertiesChanged", arg0: BlueZ.adapterInterface)) { message in
            guard let path = message.path, let on = message.arguments.dropFirst().first?.stringKeyed?["Powered"]?.bool else { return }
            handler(AdapterChange(adapter: Adapter.name(ofPath: path), kind: on ? .poweredOn : .poweredOff))
        }
        return [appeared, vanished, powered]
    }
}
