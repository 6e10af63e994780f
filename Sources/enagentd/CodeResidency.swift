import Dispatch
import Glibc

/// enagentd's code and the libraries' read-only pages resident only while used.
///
/// A start, a detection or a rare event touches code and read-only data here and there, and each
/// fault of a file mapping maps up to 64 kB around it (fault-around), so what such work touched
/// stays resident long after: two thirds of enagentd's idle RSS were its own code and the
/// libraries' read-only pages. A minute after the start, when the radio has advertised and
/// scanned, and every hour after, the clean file pages of every read-only mapping are unmapped
/// (MADV_DONTNEED): the page cache still holds the libraries' pages, and only what the running
/// agent touches again comes back. enagentd's own file is marked MADV_RANDOM (no read-ahead) and
/// its unmapped pages dropped from the page cache (POSIX_FADV_DONTNEED), so that a later fault
/// reads the page it needs instead of mapping cached neighbours it does not.
///
/// Only pages the kernel reports as file pages are unmapped: a read-only mapping also holds
/// anonymous pages (RELRO, which the loader wrote before making it read-only), which
/// MADV_DONTNEED would turn back into the file's bytes. Writable mappings are left alone.
final class CodeResidency: Sendable {
    static let firstDrop = DispatchTimeInterval.seconds(60), dropEvery = DispatchTimeInterval.seconds(3_600)

    private let pagemap: Int32

    /// Opens /proc/self/pagemap, which must happen before the process is made undumpable: that
    /// gives /proc/self's files to root, and the open then fails for the service's user.
    init() throws(CodeResidencyError) {
        pagemap = try Self.open("/proc/self/pagemap")
    }

    deinit { close(pagemap) }

    /// Drops on `queue` after `firstDrop` and every `dropEvery`; returns the timer to keep.
    func schedule(on queue: DispatchQueue, failed: @escaping @Sendable (CodeResidencyError) -> Void) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.firstDrop, repeating: Self.dropEvery)
        timer.setEventHandler { [self] in
            // Costs memory only: everything touched stays resident.
            do { try dropUntouched() } catch let error as CodeResidencyError { failed(error) } catch {}
        }
        timer.resume()
        return timer
    }

    /// Unmaps the clean file pages of this process's read-only mappings; returns how many bytes.
    @discardableResult
    func dropUntouched() throws(CodeResidencyError) -> Int {
        let executable = try Self.ownExecutable()
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var dropped = 0
        for line in try Self.readWhole("/proc/self/maps").split(separator: "\n") {
            guard let mapping = ReadOnlyFileMapping(line) else { continue }
            if mapping.path == executable, mapping.executable {
                _ = madvise(UnsafeMutableRawPointer(bitPattern: mapping.addresses.lowerBound), mapping.addresses.count, MADV_RANDOM)
            }
            for run in try Self.filePageRuns(in: mapping.addresses, pagemap: pagemap, pageSize: pageSize) {
                _ = madvise(UnsafeMutableRawPointer(bitPattern: run.lowerBound), run.count, MADV_DONTNEED)
                dropped += run.count
            }
        }
        let file = try Self.open("/proc/self/exe")
        _ = posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED)
        close(file)
        return dropped
    }

    /// The address ranges of the present file pages among `addresses` (pagemap bits 63 and 61).
    static func filePageRuns(in addresses: Range<UInt>, pagemap: Int32, pageSize: Int) throws(CodeResidencyError) -> [Range<UInt>] {
        var entries = [UInt64](repeating: 0, count: addresses.count / pageSize)
        let wanted = entries.count * MemoryLayout<UInt64>.size
        let read = entries.withUnsafeMutableBytes { pread(pagemap, $0.baseAddress, wanted, off_t(addresses.lowerBound / UInt(pageSize)) * 8) }
        guard read == wanted else { throw CodeResidencyError("cannot read /proc/self/pagemap: \(read < 0 ? String(cString: strerror(errno)) : "short read")") }
        var runs = [Range<UInt>](), runStart: UInt?
        for (index, entry) in entries.enumerated() {
            let address = addresses.lowerBound + UInt(index * pageSize)
            let filePage = entry & (1 << 63) != 0 && entry & (1 << 61) != 0
            if filePage, runStart == nil { runStart = address }
            if !filePage, let start = runStart { runs.append(start..<address); runStart = nil }
        }
        if let start = runStart { runs.append(start..<addresses.upperBound) }
        return runs
    }

    /// The whole of a /proc file: FoundationEssentials' `String(contentsOfFile:)` reads the first
    /// 4 kB of a file whose size stat gives as 0, as /proc's, and a busy process's maps are longer.
    static func readWhole(_ path: String) throws(CodeResidencyError) -> String {
        let file = try open(path)
        defer { close(file) }
        var bytes = [UInt8](), chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(file, &chunk, chunk.count)
            guard count >= 0 else { throw CodeResidencyError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk[..<count]
        }
    }

    private static func open(_ path: String) throws(CodeResidencyError) -> Int32 {
        let file = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw CodeResidencyError("cannot open \(path): \(String(cString: strerror(errno)))") }
        return file
    }

    private static func ownExecutable() throws(CodeResidencyError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { throw CodeResidencyError("cannot read /proc/self/exe: \(String(cString: strerror(errno)))") }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A line of /proc/self/maps for a private, read-only mapping of a file.
struct ReadOnlyFileMapping: Equatable {
    let addresses: Range<UInt>, executable: Bool, path: String

    init?(_ line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, fields[1] == "r--p" || fields[1] == "r-xp" else { return nil }
        let path = fields[5...].joined(separator: " ")
        guard path.hasPrefix("/") else { return nil }
        let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
        guard bounds.count == 2, bounds[0] < bounds[1] else { return nil }
        (addresses, executable, self.path) = (bounds[0]..<bounds[1], fields[1] == "r-xp", path)
    }
}

struct CodeResidencyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
