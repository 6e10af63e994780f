import ENBus
import Foundation

/// Reads a key file passed as a file descriptor, refusing more than `limit` bytes.
enum KeyFileDescriptor {
    static func read(_ descriptor: Int32, limit: Int, name: String) throws(DBusError) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Foundation.read(descriptor, &buffer, buffer.count)
            if count == 0 { return data }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw ExposureNotificationService.Failure.keyFileRejected.error("\(name): cannot read: \(String(cString: strerror(errno)))")
            }
            data.append(buffer, count: count)
            guard data.count <= limit else {
                throw ExposureNotificationService.Failure.keyFileRejected.error("\(name): larger than the limit of \(limit >> 20) MiB")
            }
        }
    }
}
