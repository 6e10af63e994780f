import FoundationEssentials
import Glibc

/// A file a person named on the command line, read only if it is a regular file and then in
/// bounded amounts: a device, a FIFO or a huge file is refused by name instead of read without end.
enum InputFile {
    /// The whole file, at most `limit` bytes; `tooLarge` words the refusal for a size.
    static func read(_ path: String, limit: Int, tooLarge: (Int) -> String) throws -> Data {
        let (descriptor, size) = try open(path)
        defer { close(descriptor) }
        guard size <= limit else { throw CommandError("\(path): \(tooLarge(size))") }
        // The file may grow while it is read: one byte more than the limit tells.
        var data = Data(), chunk = [UInt8](repeating: 0, count: 1 << 16)
        while data.count <= limit {
            let count = try chunk.withUnsafeMutableBytes { try readSome(descriptor, into: $0, path: path) }
            if count == 0 { break }
            data.append(contentsOf: chunk[..<count])
        }
        guard data.count <= limit else { throw CommandError("\(path): \(tooLarge(data.count))") }
        return data
    }

    /// The text of a small file (a configuration): at most 1 MiB of UTF-8.
    static func text(_ path: String, what: String) throws -> String {
        let data = try read(path, limit: 1 << 20) { "\($0) bytes, more than 1 MiB: not \(what)" }
        guard let text = String(data: data, encoding: .utf8) else { throw CommandError("\(path): not UTF-8 text, so not \(what)") }
        return text
    }

    /// Calls `body` with the lines of `path` a block at a time: whole lines, each but perhaps the
    /// file's last ended by its newline, and the number of the block's first line (from 1).
    /// The file is read `chunk` bytes at a time: memory stays within a chunk and
    /// `maximumLineLength`, whatever the file.
    static func forEachBlockOfLines(_ path: String, maximumLineLength: Int, chunk: Int = 1 << 22,
                                    _ body: (_ lines: UnsafeRawBufferPointer, _ firstNumber: Int) throws -> Void) throws {
        let (descriptor, _) = try open(path)
        defer { close(descriptor) }
        // A chunk, after the unfinished line the previous one left at the start.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maximumLineLength + chunk, alignment: 16)
        defer { buffer.deallocate() }
        var pending = 0, number = 0
        while true {
            let count = try readSome(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[pending..<pending + chunk]), path: path)
            if count == 0 { break }
            let filled = pending + count
            // The block ends after the chunk's last newline; what follows waits for the next chunk.
            var end = filled
            while end > 0, buffer[end - 1] != 0x0A { end -= 1 }
            if end > 0 {
                let lines = UnsafeRawBufferPointer(rebasing: buffer[..<end])
                try body(lines, number + 1)
                number += lineCount(lines)
            }
            pending = filled - end
            guard pending <= maximumLineLength else {
                throw CommandError("\(path):\(number + 1): a line longer than \(maximumLineLength) bytes")
            }
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + end, byteCount: pending)
        }
        if pending > 0 { try body(UnsafeRawBufferPointer(rebasing: buffer[..<pending]), number + 1) }
    }

    /// Calls `body` with each line of `lines` (without its newline) and its number, the first
    /// being `firstNumber`.
    static func forEachLine(in lines: UnsafeRawBufferPointer, firstNumber: Int, _ body: (UnsafeRawBufferPointer, Int) throws -> Void) rethrows {
        var start = 0, number = firstNumber
        while start < lines.count {
            let end = memchr(lines.baseAddress! + start, 0x0A, lines.count - start).map { lines.baseAddress!.distance(to: $0) } ?? lines.count
            try body(UnsafeRawBufferPointer(rebasing: lines[start..<end]), number)
            number += 1
            start = end + 1
        }
    }

    /// The lines of `lines`: its newlines, and one more for a last line without one.
    static func lineCount(_ lines: UnsafeRawBufferPointer) -> Int {
        var count = 0, start = 0
        while start < lines.count, let newline = memchr(lines.baseAddress! + start, 0x0A, lines.count - start) {
            count += 1
            start = lines.baseAddress!.distance(to: newline) + 1
        }
        return count + (start < lines.count ? 1 : 0)
    }

    /// `path` opened for reading, if it is a regular file, and its size.
    static func open(_ path: String) throws -> (descriptor: Int32, size: Int) {
        // O_NONBLOCK: opening a FIFO with no writer would wait for one.
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw CommandError("\(path): not a regular file")
        }
        return (descriptor, Int(status.st_size))
    }

    /// Up to `buffer.count` bytes of the file; 0 at its end.
    private static func readSome(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            guard errno == EINTR else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
        }
    }
}
