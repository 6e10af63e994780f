import Foundation

/// A file a person named on the command line, read only if it is a regular file and then in
/// bounded amounts: a device, a FIFO or a huge file is refused by name instead of read without end.
enum InputFile {
    /// The whole file, at most `limit` bytes; `tooLarge` words the refusal for a size.
    static func read(_ path: String, limit: Int, tooLarge: (Int) -> String) throws -> Data {
        let (handle, size) = try open(path)
        defer { try? handle.close() }
        guard size <= limit else { throw CommandError("\(path): \(tooLarge(size))") }
        // The file may grow while it is read: one byte more than the limit tells.
        let data = try handle.read(upToCount: limit + 1) ?? Data()
        guard data.count <= limit else { throw CommandError("\(path): \(tooLarge(data.count))") }
        return data
    }

    /// The text of a small file (a configuration): at most 1 MiB of UTF-8.
    static func text(_ path: String, what: String) throws -> String {
        let data = try read(path, limit: 1 << 20) { "\($0) bytes, more than 1 MiB: not \(what)" }
        guard let text = String(data: data, encoding: .utf8) else { throw CommandError("\(path): not UTF-8 text, so not \(what)") }
        return text
    }

    /// Calls `body` with each line of `path` (without its newline) and its number from 1, reading
    /// 1 MiB at a time: memory stays within the chunk and `maximumLineLength`, whatever the file.
    static func forEachLine(_ path: String, maximumLineLength: Int, _ body: (Data, Int) throws -> Void) throws {
        let (handle, _) = try open(path)
        defer { try? handle.close() }
        var pending = Data(), number = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            pending.append(chunk)
            var start = pending.startIndex
            while let newline = pending[start...].firstIndex(of: 0x0A) {
                number += 1
                try body(pending[start..<newline], number)
                start = pending.index(after: newline)
            }
            pending = Data(pending[start...])
            guard pending.count <= maximumLineLength else {
                throw CommandError("\(path):\(number + 1): a line longer than \(maximumLineLength) bytes")
            }
        }
        if !pending.isEmpty { try body(pending, number + 1) }
    }

    private static func open(_ path: String) throws -> (FileHandle, size: Int) {
        // O_NONBLOCK: opening a FIFO with no writer would wait for one.
        let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw CommandError("\(path): \(String(cString: strerror(errno)))") }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw CommandError("\(path): not a regular file")
        }
        return (FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), Int(status.st_size))
    }
}
