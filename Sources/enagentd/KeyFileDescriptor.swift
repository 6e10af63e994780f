import ENAPI
import ENBus
import FoundationEssentials
import Glibc

/// A key file passed as a file descriptor: checked when the call arrives, read when its turn
/// comes, refusing more than `limit` bytes (`limitName` says which limit that is, for the caller).
///
/// Only a regular file open for reading is read: a pipe, FIFO or socket can be held open by the
/// caller forever, and a device can be endless, so those are refused before the first read.
enum KeyFileDescriptor {
    /// Checks that `descriptor` is a regular file open for reading, of at most `limit` bytes, and
    /// returns its size.
    static func check(_ descriptor: Int32, limit: Int, limitName: String, name: String) throws(DBusError) -> Int {
        let refused = ExposureNotificationAPI.Failure.keyFileRejected
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw refused.error("\(name): \(String(cString: strerror(errno)))") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw refused.error("\(name) is \(kind(status.st_mode)), not a regular file: pass an open key file") }
        let access = fcntl(descriptor, F_GETFL) & O_ACCMODE
        guard access == O_RDONLY || access == O_RDWR else { throw refused.error("\(name) is not open for reading") }
        guard status.st_size <= limit else { throw refused.error("\(name): \(status.st_size) bytes, more than \(limitName)") }
        return Int(status.st_size)
    }

    /// Reads a file `check` passed, refusing more than `limit` bytes should it grow meanwhile.
    static func read(_ descriptor: Int32, size: Int, limit: Int, limitName: String, name: String) throws(DBusError) -> Data {
        let refused = ExposureNotificationAPI.Failure.keyFileRejected
        var data = Data()
        data.reserveCapacity(size)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count == 0 { return data }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw refused.error("\(name): cannot read: \(String(cString: strerror(errno)))")
            }
            data.append(buffer, count: count)
            // The file may grow while it is read.
            guard data.count <= limit else { throw refused.error("\(name): more than \(limitName)") }
        }
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFDIR: return "a directory"
        default: return "not a file"
        }
    }
}
