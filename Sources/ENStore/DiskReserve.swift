import Glibc

/// Room kept free on the database's file system for what must never fail to be written: the
/// device's keys, the interval on the air, consent. Sightings, which a crowd can multiply without
/// bound, are not written below it (`AgentStore.record` refuses them) and wait in the agent's
/// memory, so that the advertisement goes on.
public struct DiskReserve: Sendable {
    public var bytes: Int64
    /// The bytes free for the agent on the file system holding `path`; nil when it cannot be read
    /// (the write then goes ahead: SQLite's own full-disk error still guards it).
    let freeBytes: @Sendable (_ path: String) -> Int64?

    public static let defaultMebibytes = 64

    public init(mebibytes: Int = defaultMebibytes, freeBytes: @escaping @Sendable (_ path: String) -> Int64? = DiskReserve.freeBytes(at:)) {
        bytes = Int64(mebibytes) << 20
        self.freeBytes = freeBytes
    }

    /// What statvfs(3) says an unprivileged writer may still use (f_bavail: enagentd runs as its own user).
    public static func freeBytes(at path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Nil when `path`'s file system has more than the reserve free, else what it has.
    func shortfall(at path: String) -> Int64? {
        guard bytes > 0, let free = freeBytes(path), free < bytes else { return nil }
        return free
    }
}
