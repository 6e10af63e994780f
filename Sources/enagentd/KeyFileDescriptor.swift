import ENAPI
import ENBus
import FoundationEssentials
import Glibc

/// A key file passed as a file descriptor: checked when the call arrives (of at most `limit`
/// bytes; `limitName` says which limit that is, for the caller), read when its turn comes
/// (`KeyFileContents`, the size checked here and no more).
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
