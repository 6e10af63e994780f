import ENAPI
import ENBus
import FoundationEssentials

/// enagentd's API on the system bus, called through ENAPI's contract, with its errors turned into
/// messages a person can act on.
struct DaemonClient {
    typealias API = ExposureNotificationAPI

    let connection: DBusConnection

    init() throws {
        do { connection = try DBusConnection.system() } catch {
            throw CommandError("cannot connect to the system bus (\(error.message)); is dbus running?")
        }
    }

    /// Calls `method` and reads its reply; a reply that does not match the contract is an error, never zeros.
    @discardableResult
    func call<Input, Output>(_ method: MethodContract<Input, Output>, _ input: Input, timeout: Duration = .seconds(25)) throws -> Output {
        let reply: [DBusValue]
        do { reply = try send(method, input, timeout: timeout) } catch { throw Self.explain(error) }
        do { return try method.output(reply) } catch { throw Self.mismatch(error) }
    }

    @discardableResult
    func call<Output>(_ method: MethodContract<NoArguments, Output>) throws -> Output {
        try call(method, NoArguments())
    }

    func properties() throws -> AgentProperties {
        let reply: [DBusValue]
        do {
            reply = try connection.call(destination: API.busName, path: API.path, interface: ExportedObject.propertiesInterface,
                                        member: "GetAll", [.string(API.interface)])
        } catch {
            throw Self.explain(error)
        }
        guard reply.count == 1, let properties = reply[0].stringKeyed else {
            throw Self.mismatch(ContractMismatch("GetAll answered (\(reply.map(\.signature).joined())), not (a{sv})"))
        }
        do { return try AgentProperties(properties) } catch { throw Self.mismatch(error) }
    }

    /// What tells exposure or diagnosis, or nil when the caller may not see it.
    func healthStatus() throws -> HealthStatus? {
        let method = API.Methods.getHealthStatus
        do {
            return try method.output(try send(method, NoArguments()))
        } catch let error as DBusError where error.name == DBusError.accessDenied || error.name == API.Failure.notAuthorized.name {
            return nil
        } catch let error as DBusError {
            throw Self.explain(error)
        } catch let error as ContractMismatch {
            throw Self.mismatch(error)
        } catch {
            throw CommandError("\(error)")
        }
    }

    /// The reply's values, or the error the daemon or the bus answered with.
    private func send<Input, Output>(_ method: MethodContract<Input, Output>, _ input: Input,
                                     timeout: Duration = .seconds(25)) throws(DBusError) -> [DBusValue] {
        try connection.call(destination: API.busName, path: API.path, interface: API.interface, member: method.name, input.values, timeout: timeout)
    }

    static func explain(_ error: DBusError) -> CommandError {
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            return CommandError("enagentd is not running (nothing owns \(API.busName) on the system bus); start it with 'systemctl start enagentd'")
        case DBusError.accessDenied, API.Failure.notAuthorized.name:
            return CommandError("not allowed: only root and members of the group \(API.privilegedGroup) may do this (\(error.message))")
        default:
            return CommandError("\(error.message) [\(API.Failure(error)?.rawValue ?? error.name)]")
        }
    }

    static func mismatch(_ error: ContractMismatch) -> CommandError {
        CommandError("enagentd answered what this enctl does not understand (\(error)); are enctl and enagentd from the same version?")
    }
}
