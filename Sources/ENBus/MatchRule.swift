/// A signal match rule: the bus delivers what matches it, and the connection hands each signal
/// to the subscriptions whose rule matches.
public struct MatchRule: Sendable, Equatable {
    /// A unique name (`:1.5`) is checked here too; a well-known name (`org.bluez`) only by the bus,
    /// since signals carry the sender's unique name.
    public var sender: String?
    public var path: String?
    /// Matches `path` and every object below it.
    public var pathNamespace: String?
    public var interface: String?
    public var member: String?
    /// The first argument, when it is a string.
    public var arg0: String?

    public init(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil, interface: String? = nil,
                member: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule as the bus daemon reads it.
    public var text: String {
        let fields: [(String, String?)] = [("sender", sender), ("path", path), ("path_namespace", pathNamespace),
                                           ("interface", interface), ("member", member), ("arg0", arg0)]
        return (["type='signal'"] + fields.compactMap { name, value in
            value.map { "\(name)='\($0.replacing("'", with: "'\\''"))'" }
        }).joined(separator: ",")
    }

    public func matches(_ message: DBusMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, sender.hasPrefix(":"), message.sender != sender { return false }
        if let path, message.path != path { return false }
        if let pathNamespace, let messagePath = message.path,
           !(messagePath == pathNamespace || messagePath.hasPrefix(pathNamespace == "/" ? "/" : pathNamespace + "/")) { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let arg0, message.arguments.first?.string != arg0 { return false }
        return true
    }
}
