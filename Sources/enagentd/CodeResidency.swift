import FoundationEssentials
import Glibc

/// enagentd's code resident only while used.
///
/// The kernel maps up to 64 kB around each page fault of a file mapping (fault-around), so a start
/// that touches a few functions here and there leaves most of a static Swift binary's code
/// resident: 8 of its 10 MB, most of enagentd's idle RSS. Marked MADV_RANDOM (no fault-around,
/// no read-ahead) and dropped once after the start (MADV_DONTNEED: clean file pages return from
/// the page cache on the next touch), only what the running agent touches comes back.
enum CodeResidency {
    /// Throws when /proc does not say where the code is: then it all stays resident, which costs
    /// memory only.
    static func dropUntouched() throws {
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // The executable's code only: its read-only data includes RELRO, pages the loader wrote
            // (relocations), which MADV_DONTNEED would turn back into the file's.
            guard fields.count >= 6, fields[1] == "r-xp", fields[5...].joined(separator: " ") == executable else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt(String($0), radix: 16) }
            guard bounds.count == 2, let start = UnsafeMutableRawPointer(bitPattern: bounds[0]) else { continue }
            let length = Int(bounds[1] - bounds[0])
            _ = madvise(start, length, MADV_RANDOM)
            _ = madvise(start, length, MADV_DONTNEED)
        }
    }
}
