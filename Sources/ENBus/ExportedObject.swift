import Dispatch
import Synchronization

/// A named, typed argument, for checking calls and for introspection.
public struct DBusArgument: Sendable, Equatable {
    public var name: String
    public var signature: String

    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}

public struct DBusMethod: Sendable {
    public var name: String
    public var inArguments: [DBusArgument]
    public var outArguments: [DBusArgument]
    /// Answers the call with the out arguments; a thrown DBusError becomes the error reply.
    public var handler: @Sendable (DBusMessage) throws(DBusError) -> [DBusValue]
    /// Where a slow handler runs: the reply is sent when it returns, and the connection answers
    /// other calls meanwhile. Nil runs it on the connection's dispatcher thread.
    public var queue: DispatchQueue?

    public init(_ name: String, in inArguments: [DBusArgument] = [], out outArguments: [DBusArgument] = [], queue: DispatchQueue? = nil,
                handler: @escaping @Sendable (DBusMessage) throws(DBusError) -> [DBusValue]) {
        self.name = name
        self.inArguments = inArguments
        self.outArguments = outArguments
        self.queue = queue
        self.handler = handler
    }
}

public struct DBusProperty: Sendable {
    public var name: String
    public var signature: String
    /// A getter that cannot answer throws: Get and GetAll answer with its error, never a made-up value.
    public var get: @Sendable () throws(DBusError) -> DBusValue
    /// nil for a read-only property.
    public var set: (@Sendable (DBusValue) throws(DBusError) -> Void)?

    public init(_ name: String, _ signature: String, get: @escaping @Sendable () throws(DBusError) -> DBusValue,
                set: (@Sendable (DBusValue) throws(DBusError) -> Void)? = nil) {
        self.name = name
        self.signature = signature
        self.get = get
        self.set = set
    }
}

public struct DBusSignal: Sendable {
    public var name: String
    public var arguments: [DBusArgument]

    public init(_ name: String, _ arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignal]

    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignal] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

/// An object served on the bus: its interfaces' methods and properties, plus
/// `org.freedesktop.DBus.Properties` and `org.freedesktop.DBus.Introspectable`.
public final class ExportedObject: Sendable {
    public static let propertiesInterface = "org.freedesktop.DBus.Properties"
    public static let introspectableInterface = "org.freedesktop.DBus.Introspectable"

    public let path: String
    public let interfaces: [DBusInterface]
    /// Weak: the connection holds its exported objects, and a strong link back would keep both alive.
    private let attachedConnection = Mutex(WeakConnection())
    /// What PropertiesChanged said last of each property, as "interface.name": what clients were told.
    private let announced = Mutex([String: DBusValue]())

    var connection: DBusConnection? {
        get { attachedConnection.withLock { $0.connection } }
        set { attachedConnection.withLock { $0.connection = newValue } }
    }

    struct WeakConnection {
        weak var connection: DBusConnection?
    }

    public init(path: String, interfaces: [DBusInterface]) {
        self.path = path
        self.interfaces = interfaces
    }

    /// Emits PropertiesChanged with the current values of those of `names` whose value differs from
    /// the one this object announced last (all of them the first time), and none at all when none
    /// does, as systemd's daemons announce only what changed; a caller names what may have changed.
    /// A property whose getter fails is listed as invalidated, so that clients ask for it (and get
    /// the error) instead of a stale value.
    public func propertiesChanged(interface name: String, _ names: [String]) throws(DBusError) {
        guard let connection, let interface = interfaces.first(where: { $0.name == name }) else { return }
        var values = [String: DBusValue](), invalidated = [String]()
        for property in interface.properties where names.contains(property.name) {
            do { values[property.name] = try property.get() } catch { invalidated.append(property.name) }
        }
        let changed = announced.withLock { announced in
            let changed = values.filter { announced[name + "." + $0.key] != $0.value }
            for (property, value) in changed { announced[name + "." + property] = value }
            for property in invalidated { announced[name + "." + property] = nil }
            return changed
        }
        guard !changed.isEmpty || !invalidated.isEmpty else { return }
        try connection.emit(path: path, interface: Self.propertiesInterface, member: "PropertiesChanged",
                             [.string(name), .properties(changed), .strings(invalidated)])
    }

    /// Emits one of this object's signals, to `destination` only when one is given.
    public func emit(interface: String, signal: String, destination: String? = nil, _ arguments: [DBusValue]) throws(DBusError) {
        guard let connection else { throw DBusError(name: DBusError.failed, message: "\(path) is not exported") }
        try connection.emit(path: path, interface: interface, member: signal, destination: destination, arguments)
    }

    /// The reply to `call`, or nil when a method with a queue will send it later.
    func handle(_ call: DBusMessage) -> DBusMessage? {
        do {
            switch try resolve(call) {
            case .answered(let values):
                return try call.methodReturn(values)
            case .method(let method):
                guard let queue = method.queue else { return Self.reply(to: call, by: method) }
                queue.async { [weak self] in
                    let reply = Self.reply(to: call, by: method)
                    if call.expectsReply { self?.connection?.send(reply) }
                }
                return nil
            }
        } catch {
            return call.errorReply(error)
        }
    }

    private static func reply(to call: DBusMessage, by method: DBusMethod) -> DBusMessage {
        do { return try call.methodReturn(try method.handler(call)) } catch { return call.errorReply(error) }
    }

    private enum Resolution {
        case answered([DBusValue])
        case method(DBusMethod)
    }

    private func resolve(_ call: DBusMessage) throws(DBusError) -> Resolution {
        let member = call.member ?? ""
        switch call.interface {
        case Self.introspectableInterface? where member == "Introspect":
            return .answered([.string(introspectionXML(children: connection?.childNodes(of: path) ?? []))])
        case Self.propertiesInterface?:
            return .answered(try answerProperties(call, member: member))
        default:
            let candidates = interfaces.filter { call.interface == nil || $0.name == call.interface }
            guard !candidates.isEmpty else { throw DBusError(name: DBusError.unknownInterface, message: "\(path) has no interface \(call.interface ?? "")") }
            guard let method = candidates.lazy.compactMap({ $0.methods.first { $0.name == member } }).first else {
                throw DBusError(name: DBusError.unknownMethod, message: "\(call.interface ?? "") has no method \(member)")
            }
            let expected = method.inArguments.map(\.signature).joined()
            guard call.signature == expected else {
                throw DBusError(name: DBusError.invalidArgs, message: "\(member) takes (\(expected)), not (\(call.signature))")
            }
            return .method(method)
        }
    }

    private func answerProperties(_ call: DBusMessage, member: String) throws(DBusError) -> [DBusValue] {
        let arguments = call.arguments
        let expected = ["Get": "ss", "GetAll": "s", "Set": "ssv"]
        guard let signature = expected[member] else { throw DBusError(name: DBusError.unknownMethod, message: "Properties has no method \(member)") }
        guard call.signature == signature else {
            throw DBusError(name: DBusError.invalidArgs, message: "\(member) takes (\(signature)), not (\(call.signature))")
        }
        let interfaceName = arguments[0].string ?? ""
        // An empty interface name means any interface (the D-Bus specification allows it for Get and GetAll).
        let interface = interfaces.first { $0.name == interfaceName || (interfaceName.isEmpty && member != "Set") }
        if member == "GetAll" {
            guard let interface else { return [.properties([:])] }
            var values = [String: DBusValue]()
            for property in interface.properties { values[property.name] = try property.get() }
            return [.properties(values)]
        }
        let name = arguments[1].string ?? ""
        guard let property = interface?.properties.first(where: { $0.name == name }) else {
            throw DBusError(name: DBusError.unknownProperty, message: "\(interfaceName) has no property \(name)")
        }
        if member == "Get" { return [.variant(try property.get())] }
        guard let set = property.set else { throw DBusError(name: DBusError.propertyReadOnly, message: "\(name) is read-only") }
        let value = arguments[2].unwrapped
        guard value.signature == property.signature else {
            throw DBusError(name: DBusError.invalidArgs, message: "\(name) is of type \(property.signature), not \(value.signature)")
        }
        try set(value)
        try propertiesChanged(interface: interface!.name, [name])
        return []
    }

    /// Answers calls to a path with no object: introspection lists the children, the rest is unknown.
    static func handleUnknown(_ call: DBusMessage, path: String, children: [String]) -> DBusMessage {
        if call.interface == introspectableInterface && call.member == "Introspect", !children.isEmpty {
            do throws(DBusError) { return try call.methodReturn([.string(ExportedObject(path: path, interfaces: []).introspectionXML(children: children))]) } catch {
                return call.errorReply(error)
            }
        }
        return call.errorReply(DBusError(name: DBusError.unknownObject, message: "no object at \(path)"))
    }

    /// The introspection document: standard interfaces first, then this object's, then children.
    public func introspectionXML(children: [String] = []) -> String {
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>
              <interface name="org.freedesktop.DBus.Introspectable">
                <method name="Introspect">
                  <arg name="xml" type="s" direction="out"/>
                </method>
              </interface>

            """
        if !interfaces.isEmpty {
            xml += """
                  <interface name="org.freedesktop.DBus.Properties">
                    <method name="Get">
                      <arg name="interface" type="s" direction="in"/>
                      <arg name="name" type="s" direction="in"/>
                      <arg name="value" type="v" direction="out"/>
                    </method>
                    <method name="GetAll">
                      <arg name="interface" type="s" direction="in"/>
                      <arg name="properties" type="a{sv}" direction="out"/>
                    </method>
                    <method name="Set">
                      <arg name="interface" type="s" direction="in"/>
                      <arg name="name" type="s" direction="in"/>
                      <arg name="value" type="v" direction="in"/>
                    </method>
                    <signal name="PropertiesChanged">
                      <arg name="interface" type="s"/>
                      <arg name="changed" type="a{sv}"/>
                      <arg name="invalidated" type="as"/>
                    </signal>
                  </interface>

                """
        }
        for interface in interfaces { xml += Self.xml(interface) }
        for child in children { xml += "  <node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }

    /// One interface's element, as in the documents under dbus/.
    public static func xml(_ interface: DBusInterface) -> String {
        func arguments(_ list: [DBusArgument], direction: String?) -> String {
            list.map { "      <arg name=\"\($0.name)\" type=\"\(escape($0.signature))\"\(direction.map { " direction=\"\($0)\"" } ?? "")/>\n" }.joined()
        }
        var xml = "  <interface name=\"\(interface.name)\">\n"
        for method in interface.methods {
            let body = arguments(method.inArguments, direction: "in") + arguments(method.outArguments, direction: "out")
            xml += body.isEmpty ? "    <method name=\"\(method.name)\"/>\n" : "    <method name=\"\(method.name)\">\n\(body)    </method>\n"
        }
        for property in interface.properties {
            xml += "    <property name=\"\(property.name)\" type=\"\(escape(property.signature))\" access=\"\(property.set == nil ? "read" : "readwrite")\"/>\n"
        }
        for signal in interface.signals {
            let body = arguments(signal.arguments, direction: nil)
            xml += body.isEmpty ? "    <signal name=\"\(signal.name)\"/>\n" : "    <signal name=\"\(signal.name)\">\n\(body)    </signal>\n"
        }
        return xml + "  </interface>\n"
    }

    private static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
    }
}
