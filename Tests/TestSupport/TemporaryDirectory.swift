import Foundation

/// A fresh directory under the system temporary directory, removed when released.
public final class TemporaryDirectory {
    public let path: String

    public init() {
        var template = Array((NSTemporaryDirectory() + "/enagent-test-XXXXXX").utf8CString)
        path = String(cString: mkdtemp(&template)!)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func file(_ name: String) -> String { path + "/" + name }
}
