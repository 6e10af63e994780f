import ENBus
import Foundation

/// enagentd's API on the system bus, with its errors turned into messages a person can act on.
struct DaemonClient {
    static let busName = "org.enagent.ExposureNotification1"
    static let path = "/org/enagent/ExposureNotification1"
    static let interface = "org.enagent.ExposureNotification1"

    let connection: DBusConnection

    init() throws {
        do { connection = try DBusConnection.system() } catch {
            throw CommandError("cannot connect to the system bus (\(error.message)); is dbus running?")
        }
    }

    @discardableResult
    func call(_ method: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) throws -> [DBusValue] {
        do {
            return try connection.call(destination: Self.busName, path: Self.path, interface: Self.interface, member: method, arguments, timeout: timeout)
        } catch {
            throw Self.explain(error)
        }
    }

    func properties() throws -> [String: DBusValue] {
        do {
            let reply = try connection.call(destination: Self.busName, path: Self.path, interface: ExportedObject.propertiesInterface,
                                            member: "GetAll", [.string(Self.interface)])
            return reply.first?.stringKeyed?.mapValues(\.unwrapped) ?? [:]
        } catch {
            throw Self.explain(error)
        }
    }

    static func explain(_ error: DBusError) -> CommandError {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return CommandError("enagentd is not running (nothing owns \(busName) on the system bus); start it with 'systemctl start enagentd'")
        case DBusError.accessDenied, "\(interface).Error.NotAuthorized":
            return CommandError("not allowed: only root and members of the group enagent may do this (\(error.message))")
        default:
            let name = error.name.hasPrefix(interface + ".Error.") ? String(error.name.dropFirst(interface.count + 7)) : error.name
            return CommandError("\(error.message) [\(name)]")
        }
    }
}
