import Dispatch
import ENBus

extension DBusConnection {
    /// Calls `gone`, off the connection's thread, once the connection `name` has left the bus; and
    /// before returning when it already has, since a name gone before the watch began told no one
    /// (the caller then knows it is gone as soon as this returns). Cancelling the subscription
    /// ends the watch.
    func whenGone(_ name: String, _ gone: @escaping @Sendable () -> Void) throws(DBusError) -> SignalSubscription {
        let watch = try subscribe(MatchRule(sender: Self.bus.name, path: Self.bus.path, interface: Self.bus.interface, member: "NameOwnerChanged", arg0: name)) { signal in
            guard signal.arguments.count == 3, signal.arguments[2].string == "" else { return }
            DispatchQueue.global().async(execute: gone)
        }
        do {
            if try callBus("NameHasOwner", [.string(name)]).first?.bool == false {
                gone()
            }
        } catch {
            watch.cancel()
            throw error
        }
        return watch
    }
}
