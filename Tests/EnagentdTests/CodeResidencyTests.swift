import ENCore
@testable import enagentd
import Foundation
import TestSupport
import Testing

struct CodeResidencyTests {
    /// Unmapping the clean file pages of read-only mappings lowers the resident memory and keeps
    /// their anonymous pages (the loader's relocations), and what runs after still works.
    @Test func dropsFilePagesAndKeepsRelocations() throws {
        let tek = TemporaryExposureKeyData(bytes: [UInt8](repeating: 0x75, count: 16))!
        let rpi = { () throws -> RollingProximityIdentifier in
            let crypto = try ExposureCrypto()
            return try crypto.rollingProximityIdentifier(key: crypto.rollingProximityIdentifierKey(for: tek), interval: ENIntervalNumber(2_650_847))
        }
        let rpiBefore = try rpi()
        let before = try ReadOnlyResidency.measure()
        let dropped = try CodeResidency().dropUntouched()
        let after = try ReadOnlyResidency.measure()
        #expect(dropped > 0)
        // Mappings the test run's other threads add meanwhile (dlopen) do not count.
        let kept = before.filter { after[$0.key] != nil }
        #expect(kept.allSatisfy { after[$0.key]!.anonymous == $0.value.anonymous }, "a read-only mapping's anonymous pages (RELRO) are kept")
        let (residentBefore, residentAfter) = (kept.values.map(\.resident).reduce(0, +), kept.keys.map { after[$0]!.resident }.reduce(0, +))
        #expect(residentAfter < residentBefore, "file pages unmapped: \(residentBefore) → \(residentAfter) bytes")
        // Code and data of OpenSSL and Swift's runtime, faulted in again, give what they gave.
        #expect(try rpi() == rpiBefore)
    }

    /// Present file pages only (bits 63 and 61): never an anonymous, a swapped or an absent page.
    @Test func findsRunsOfPresentFilePages() throws {
        let directory = TemporaryDirectory()
        let present: UInt64 = 1 << 63, swapped: UInt64 = 1 << 62, file: UInt64 = 1 << 61
        // Pages 1…7: file, file, anonymous, absent, swapped, file, file (the file begins at page 0).
        let entries: [UInt64] = [0, present | file, present | file, present, 0, swapped, present | file, present | file | 0x1234]
        let path = directory.file("pagemap")
        try entries.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: path)) }
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        let page: UInt = 4_096
        let runs = try CodeResidency.filePageRuns(in: page..<(8 * page), pagemap: descriptor, pageSize: Int(page))
        #expect(runs == [page..<(3 * page), (6 * page)..<(8 * page)])
        #expect(throws: CodeResidencyError.self) {
            try CodeResidency.filePageRuns(in: page..<(9 * page), pagemap: descriptor, pageSize: Int(page))
        }
    }

    @Test func readsPrivateReadOnlyFileMappingsOnly() {
        let code = ReadOnlyFileMapping("55d0c0a00000-55d0c0b00000 r-xp 00026000 fe:00 333661                     /usr/lib/a library.so")
        #expect(code?.addresses == 0x55d0c0a00000..<0x55d0c0b00000)
        #expect(code?.executable == true)
        #expect(code?.path == "/usr/lib/a library.so")
        #expect(ReadOnlyFileMapping("7f00-8f00 r--p 00000000 fe:00 1 /usr/lib/x.so")?.executable == false)
        for line in ["7f00-8f00 rw-p 00000000 fe:00 1 /usr/lib/x.so", "7f00-8f00 r--s 00000000 fe:00 1 /usr/lib/x.so",
                     "7f00-8f00 r-xp 00000000 00:00 0 [vdso]", "7f00-8f00 r--p 00000000 00:00 0", "8f00-7f00 r--p 0 fe:00 1 /x"] {
            #expect(ReadOnlyFileMapping(Substring(line)) == nil, "\(line)")
        }
    }

    /// The maps of a process with many mappings, whole: longer than the 4 kB FoundationEssentials
    /// reads of a /proc file, up to the stack's line.
    @Test func readsALongProcFileWhole() throws {
        let maps = try CodeResidency.readWhole("/proc/self/maps")
        #expect(maps.utf8.count > 4_096)
        #expect(maps.contains("[stack]"))
        #expect(maps.hasSuffix("\n"))
    }
}

/// Bytes of each of this process's private read-only file mappings, by address: resident, and
/// anonymous among them.
private struct ReadOnlyResidency {
    var resident = 0, anonymous = 0

    static func measure() throws -> [UInt: ReadOnlyResidency] {
        var mappings = [UInt: ReadOnlyResidency](), current: UInt?
        for line in try CodeResidency.readWhole("/proc/self/smaps").split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), !first.hasSuffix(":") {
                current = ReadOnlyFileMapping(line)?.addresses.lowerBound
            } else if let start = current, fields.count == 3, let kB = Int(fields[1]) {
                if fields[0] == "Rss:" { mappings[start, default: ReadOnlyResidency()].resident += kB * 1_024 }
                if fields[0] == "Anonymous:" { mappings[start, default: ReadOnlyResidency()].anonymous += kB * 1_024 }
            }
        }
        return mappings
    }
}
