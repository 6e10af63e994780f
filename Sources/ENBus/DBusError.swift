/// A D-Bus error: an error reply from a peer, or a failure of the bus itself.
public struct DBusError: Error, Equatable, CustomStringConvertible {
    /// A D-Bus error name such as `org.freedesktop.DBus.Error.ServiceUnknown`.
    public let name: String
    public let message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    public static let failed = "org.freedesktop.DBus.Error.Failed"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
}
