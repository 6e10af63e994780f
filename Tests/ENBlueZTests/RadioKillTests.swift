@testable import ENBlueZ
import Foundation
import Testing

struct RadioKillTests {
    /// A sysfs tree as a laptop's kernel shows it: the Wi-Fi blocked, one adapter blocked by
    /// software (airplane mode), one by the hardware switch, one free.
    @Test func readsTheAdaptersSwitchFromSysfs() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("rfkill-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (entry, name, soft, hard) in [("rfkill0", "phy0", "1", "0"), ("rfkill1", "hci0", "0", "0"),
                                          ("rfkill2", "hci1", "1\n", "0\n"), ("rfkill3", "hci2", "0", "1")] {
            let directory = root + "/" + entry
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for (file, value) in [("name", name + "\n"), ("soft", soft), ("hard", hard)] {
                try value.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
            }
        }
        #expect(RadioKill.block(of: "hci0", root: root) == nil)
        #expect(RadioKill.block(of: "hci1", root: root) == .soft)
        #expect(RadioKill.block(of: "hci2", root: root) == .hard)
        #expect(RadioKill.block(of: "hci3", root: root) == nil, "no switch for it")
        #expect(RadioKill.block(of: "hci0", root: root + "/missing") == nil, "no rfkill in the kernel")
        #expect(RadioKill.soft.remedy.contains("rfkill unblock bluetooth"))
    }
}
