import Foundation

/// A fresh directory under the system temporary directory, removed when released.
public final class TemporaryDirectory {
    public let path: String

    public init() {
        var template = Array((NSTemporaryDirectory() + "/enagent-test-XXXXXX").utf8CString)
        // mkdtemp's answer points into the template: read it while the buffer is ours (a pointer
        // kept past `&template` is undefined, and broke on arm64's release build).
        path = template.withUnsafeMutableBufferPointer { buffer in
            guard let made = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp: \(String(cString: strerror(errno)))") }
            return String(cString: made)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }
}
