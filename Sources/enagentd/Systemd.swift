import CENSystemd

/// sd_notify(3): tells systemd about readiness and status; does nothing outside a unit.
enum Systemd {
    static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
