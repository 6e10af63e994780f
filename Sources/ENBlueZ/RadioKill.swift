import FoundationEssentials

/// The kernel's radio kill switches (rfkill, /sys/class/rfkill): airplane mode, `rfkill block
/// bluetooth`, or a laptop's hardware switch. bluetoothd answers only "Failed" when asked to power
/// a blocked adapter on; this says why.
public enum RadioKill: Equatable, Sendable {
    case soft, hard

    /// How the adapter named `adapter` (hci0) is blocked, nil when it is not or when sysfs does not
    /// say (`root` is /sys/class/rfkill but in tests).
    public static func block(of adapter: String, root: String = "/sys/class/rfkill") -> RadioKill? {
        let switches: [String]
        do { switches = try FileManager.default.contentsOfDirectory(atPath: root) } catch {
            return nil  // no rfkill in this kernel, or sysfs hidden: nothing is known to block it
        }
        for entry in switches.sorted() {
            let directory = root + "/" + entry
            guard read(directory + "/name") == adapter else { continue }
            if read(directory + "/hard") == "1" { return .hard }
            if read(directory + "/soft") == "1" { return .soft }
            return nil
        }
        return nil
    }

    /// What a person does about it.
    public var remedy: String {
        switch self {
        case .soft: return "airplane mode or 'rfkill block' (lift it with 'rfkill unblock bluetooth')"
        case .hard: return "the machine's radio switch (a hardware switch or key)"
        }
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
    }
}
