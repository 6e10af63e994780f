import CENSystemd

/// sd_notify(3): tells systemd about readiness and status; does nothing outside a unit.
public enum Systemd {
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
