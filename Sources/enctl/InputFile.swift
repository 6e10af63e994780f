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

    /// Calls `body` with each line of `path` (without its newline, valid only during the call)
    /// and its number from 1, reading 1 MiB at a time: memory stays within the chunk and
    /// `maximumLineLength`, whatever the file.
    static func forEachLine(_ path: String, maximumLineLength: Int, _ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        let (descriptor, _) = try open(path)
        defer { close(descriptor) }
        let chunk = 1 << 20
        // A chunk, after the unfinished line the previous one left at the start.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: maximumLineLength + chunk, alignment: 16)
        defer { buffer.deallocate() }
        var pending = 0, number = 0
        while true {
            let count = try readSome(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[pending..<pending + chunk]), path: path)
            if count == 0 { break }
            let filled = pending + count
            var start = 0
            while let newline = memchr(buffer.baseAddress! + start, 0x0A, filled - start) {
                let end = buffer.baseAddress!.distance(to: newline)
                number += 1
                try body(UnsafeRawBufferPointer(rebasing: buffer[start..<end]), number)
                start = end + 1
            }
            pending = filled - start
            guard pending <= maximumLineLength else {
                throw CommandError("\(path):\(number + 1): a line longer than \(maximumLineLength) bytes")
            }
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: pending)
        }
        if pending > 0 { try body(UnsafeRawBufferPointer(rebasing: buffer[..<pending]), number + 1) }
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
