import ENHarness
import Foundation

/// A tmpfs of a few hundred KiB mounted on a temporary directory (the tests run as root), that a
/// test fills to the last page to see what a full disk does, and frees again.
public final class SmallFilesystem {
    public let path: String
    private let directory = TemporaryDirectory()
    private var filler: String { path + "/filler" }

    public init(kibibytes: Int) throws {
        path = directory.file("mount")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let mount = try ChildProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kibibytes)k,mode=0700", "tmpfs", path], captureStandardError: true)
        guard mount.waitForExit() == 0 else {
            throw POSIXError(.EPERM, userInfo: [NSLocalizedDescriptionKey: "cannot mount a tmpfs (the full-disk tests need root): \(mount.standardError())"])
        }
    }

    /// Writes a file until the filesystem has not a byte left.
    public func fill() {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(descriptor) }
        let page = [UInt8](repeating: 0xA5, count: 4096)
        while write(descriptor, page, page.count) > 0 {}
        while write(descriptor, page, 1) > 0 {}
    }

    /// Writes the filler until the filesystem has at most `bytes` free.
    public func fill(leaving bytes: Int64) {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(descriptor) }
        let page = [UInt8](repeating: 0xA5, count: 4096)
        var info = statvfs()
        while statvfs(path, &info) == 0, Int64(info.f_bavail) * Int64(info.f_frsize) > bytes, write(descriptor, page, page.count) > 0 {}
    }

    public func free() { unlink(filler) }

    deinit {
        let unmount = try? ChildProcess("/bin/umount", ["-l", path])
        _ = unmount?.waitForExit()
    }
}
