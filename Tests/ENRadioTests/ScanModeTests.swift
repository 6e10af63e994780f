import ENRadio
import Testing

/// The scan where passive-scan is not set: passive only on kernels known to have the advertisement
/// monitor fixes, read from their release strings as uname gives them.
@Suite struct ScanModeTests {
    static let releases: [(release: String, mode: BlueZRadio.ScanMode)] = [
        ("6.12.117+deb13-amd64", .passive),      // Debian 13
        ("6.12.80", .passive),
        ("6.12.79", .active),                    // 17f89341cb42 without 5f5fa4cd35f7
        ("6.12.47+rpt-rpi-v8", .active),         // Raspberry Pi OS
        ("6.12.0-55.el10.x86_64", .active),      // a distribution's own numbering: unknown
        ("6.1.0-56-amd64", .active),             // Debian 12
        ("6.1.166", .active),
        ("6.18.22", .active),                    // not known to have all three
        ("6.19.11-arch1-1", .active),
        ("7.0.0-rc3", .active),
        ("7.0.0", .passive),
        ("7.0.1", .passive),
        ("7.1.0-rc1-00012-gabcdef", .passive),
        ("8.0", .passive),
        ("5.10.0-32-arm64", .active),
        ("", .active),
        ("garbage", .active),
        ("6", .active),
        ("6.12.", .active),
        ("6.12.80.1", .active),
        ("v7.0.1", .active),
        ("99999999999999999999.0.0", .active),
    ]

    @Test(arguments: releases)
    func scanMode(release: String, mode: BlueZRadio.ScanMode) {
        #expect(BlueZRadio.ScanMode.default(kernelRelease: release) == mode)
    }

    @Test func aReleaseReadsAsItsVersionNumbers() throws {
        let debian = try #require(KernelRelease("6.12.117+deb13-amd64"))
        #expect((debian.major, debian.minor, debian.patch, debian.isReleaseCandidate) == (6, 12, 117, false))
        let candidate = try #require(KernelRelease("7.0.0-rc5+"))
        #expect((candidate.major, candidate.minor, candidate.patch, candidate.isReleaseCandidate) == (7, 0, 0, true))
        let twoNumbers = try #require(KernelRelease("7.1-custom"))
        #expect((twoNumbers.major, twoNumbers.minor, twoNumbers.patch) == (7, 1, 0))
        #expect(KernelRelease("linux") == nil)
    }
}
