import Dispatch
import ENBus

extension DBusConnection {
    /// Calls `gone`, off the connection's thread, once the connection `name` has left the bus; and
    /// before returning when it already has, since a name gone before the watch began told no one
    /// (the caller then knows it is gone as soon as this returns). Cancelling the subscription
    /// ends the watch.
    func whenGone(_ name: String, _ gone: @escaping @Sendable () -> Void) throws(DBusError) -> SignalSubscription {
        let bus = (destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus")
        let watch = try subscribe(MatchRule(sender: bus.destination, path: bus.path, interface: bus.interface, member: "NameOwnerChanged", arg0: name)) { signal in
            guard signal.arguments.count == 3, signal.arguments[2].string == "" else { return }
            DispatchQueue.global().async(execute: gone)
        }
        do {
            if try call(destination: bus.destination, path: bus.path, interface: bus.interface, member: "NameHasOwner", [.string(name)]).first?.bool == false {
                gone()
            }
        } catch {
            watch.cancel()
            throw error
        }
        return watch
    }
}
