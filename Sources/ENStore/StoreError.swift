/// Why the store could not do what was asked, in words a person can act on.
public enum StoreError: Error, CustomStringConvertible {
    /// The file is not a SQLite database, or its pages are damaged.
    case corrupt(path: String, detail: String)
    /// The file or its directory could not be created or opened.
    case cannotOpen(path: String, reason: String)
    /// A newer enagent has written a schema this version does not know.
    case newerSchema(path: String)
    /// The disk (or the filesystem's quota) has no room for the write.
    case full(path: String)
    /// Sightings were not written: the disk holding the database has `free` bytes, less than the
    /// `reserve` kept for keys and consent (`DiskReserve`).
    case belowDiskReserve(path: String, free: Int64, reserve: Int64)
    /// A query failed after the database opened.
    case sqlite(String)
    /// A setting holds a text that is not a value of its kind.
    case malformedSetting(name: String, value: String)

    /// Whether the disk is full (the store resumes by itself once there is room).
    public var isFull: Bool {
        if case .full = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .corrupt(let path, let detail):
            return "The database \(path) is damaged (\(detail)). Stop enagentd and move the file aside; a new, empty database is created at the next start."
        case .cannotOpen(let path, let reason):
            return "Cannot open the database \(path): \(reason)."
        case .newerSchema(let path):
            return "The database \(path) was written by a newer version of enagent; upgrade enagent to use it."
        case .full(let path):
            return "The disk holding the database \(path) is full; nothing stored was lost. Free some space: enagent resumes by itself."
        case .belowDiskReserve(let path, let free, let reserve):
            return "The disk holding the database \(path) has \(free >> 20) MiB free, less than the \(reserve >> 20) MiB kept for keys and consent "
                + "(disk-reserve-mb in enagent.conf): sightings wait in memory until there is more room. Free some space."
        case .sqlite(let message):
            return "Database error: \(message)"
        case .malformedSetting(let name, let value):
            return "The database's setting \(name) holds \"\(value)\", which is not a value of its kind; the database may be damaged."
        }
    }
}
