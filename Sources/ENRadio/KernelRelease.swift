/// A Linux kernel's version as its release string (uname -r) starts: "6.12.117+deb13-amd64" is
/// 6.12.117, "6.1.0-56-amd64" is 6.1.0 (Debian 12 keeps 0 there and the ABI after it).
public struct KernelRelease: Equatable, Sendable {
    public let major: Int, minor: Int, patch: Int
    /// A mainline release candidate ("7.0.0-rc3"): before the release of its version.
    public let isReleaseCandidate: Bool

    /// Nil unless `release` starts with major.minor or major.minor.patch.
    public init?(_ release: String) {
        let version = release.prefix { "0123456789.".contains($0) }
        let numbers = version.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(numbers.count), let major = numbers[0], let minor = numbers[1], let patch = numbers.count == 3 ? numbers[2] : 0
        else { return nil }
        (self.major, self.minor, self.patch) = (major, minor, patch)
        isReleaseCandidate = release.dropFirst(version.count).hasPrefix("-rc")
    }

    /// Whether the kernel has the three fixes to the Add Advertisement Patterns Monitor command
    /// that an adapter's power-off frees while it is queued: 302a1f674c00 ("Bluetooth: MGMT: Fix
    /// possible UAFs", mainline 6.17), 17f89341cb42 ("... Fix list corruption and UAF in command
    /// complete handlers") and 5f5fa4cd35f7 ("... Fix dangling pointer on
    /// mgmt_add_adv_patterns_monitor_complete"), both in mainline 7.0. Of the stable series, only
    /// 6.12.80 and later are known to have all three (6.12.59–6.12.79 have some, which deadlock
    /// or free too early instead); the others count as lacking them, release candidates of 7.0 too.
    public var hasAdvertisementMonitorFixes: Bool {
        if (major, minor) == (6, 12) { return patch >= 80 }
        return major >= 7 && !(major == 7 && minor == 0 && isReleaseCandidate)
    }
}

extension BlueZRadio.ScanMode {
    /// The scan where passive-scan is not set: passive on a kernel known to have the advertisement
    /// monitor fixes, active on any other, and on a release that does not parse.
    public static func `default`(kernelRelease: String) -> Self {
        KernelRelease(kernelRelease)?.hasAdvertisementMonitorFixes == true ? .passive : .active
    }
}
