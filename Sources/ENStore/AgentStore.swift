import ENCore
import ENSQLite
import Glibc
import Synchronization

/// The agent's SQLite database: keys, sightings, processed key files, exposure results,
/// settings, consent and test results.
///
/// WAL mode with one writer and concurrent readers: writes take the writer connection in turn,
/// each read takes an idle reader connection (or opens one) and reads one snapshot. The file is
/// created with mode 0600 in a 0700 directory, because it holds the device's keys and everyone it
/// met. Deleted rows are overwritten (`secure_delete`), so retention really forgets.
public final class AgentStore: Sendable {
    public let path: String
    private let writer: Mutex<SQLiteConnection>
    /// The connection that folds the log into the database (`checkpoint`), opened at the first
    /// fold: not the writer's, so that writes go on meanwhile.
    private let checkpointer = Mutex<SQLiteConnection?>(nil)
    private let idleReaders = Mutex<[SQLiteConnection]>([])
    private let closed = Atomic<Bool>(false)
    /// Told after each write that stored sightings (`whenSightingsRecorded`).
    private let sightingsRecorded = Mutex<(@Sendable () -> Void)?>(nil)
    /// Readers kept open between reads; more than this are closed after their read.
    private static let idleReaderLimit = 4
    /// The room kept for keys and consent, below which sightings are not written; nil: none.
    private let diskReserve: DiskReserve?
    /// Bytes the write-ahead log file keeps once a checkpoint has emptied it.
    static let walSizeLimit = 512 * 1024

    /// Opens (creating when absent) the database at `path`, migrates it and checks its integrity.
    public init(path: String, diskReserve: DiskReserve? = nil) throws(StoreError) {
        self.path = path
        self.diskReserve = diskReserve
        try Self.prepareFile(at: path)
        do {
            let connection = try SQLiteConnection(path: path)
            // foreign_keys: the schema's ON DELETE CASCADE (scan_instance, shared_key, pending_upload).
            // synchronous FULL: each commit is on the disk when it returns, a power cut loses no
            // consent, key or sighting the agent was told is stored; stated here, not left to the
            // build's default (Debian's is FULL, others' NORMAL, which in WAL mode may lose the last commits).
            // journal_size_limit: the log file is cut back to it whenever a checkpoint has emptied it.
            try connection.execute(script: """
                PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA journal_size_limit = \(Self.walSizeLimit);
                PRAGMA secure_delete = ON; PRAGMA foreign_keys = ON
                """)
            let problems = try connection.fetchAll(String.self, "PRAGMA quick_check")
            if problems != ["ok"] {
                throw StoreError.corrupt(path: path, detail: problems.prefix(3).joined(separator: "; "))
            }
            try Schema.migrate(connection, path: path)
            writer = Mutex(connection)
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Calls `body` after each write that stored sightings, on the writer's thread (the daemon
    /// announces SightingsStored): the one place that knows when the count changes with the radio.
    public func whenSightingsRecorded(_ body: @escaping @Sendable () -> Void) {
        sightingsRecorded.withLock { $0 = body }
    }

    func sightingsWereRecorded() {
        sightingsRecorded.withLock { $0 }?()
    }

    /// Throws when the disk has less free than the reserve: before a write that may be refused for it.
    func checkDiskReserve() throws(StoreError) {
        guard let reserve = diskReserve, let free = reserve.shortfall(at: path) else { return }
        throw .belowDiskReserve(path: path, free: free, reserve: reserve.bytes)
    }

    /// Runs `body` in one write transaction: all of it is stored, or on error nothing.
    func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        do {
            return try writer.withLock { connection in try connection.transaction(.immediate) { try body(connection) } }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Runs `body` in a transaction unless another write holds the writer (a scan's sightings,
    /// with the checkpoint SQLite makes after a write that grew the log past 1,000 pages: seconds
    /// on a slow disk); nil then, with nothing written.
    func writeUnlessBusy<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T? {
        try checkOpen()
        do {
            return try writer.withLockIfAvailable { connection in try connection.transaction(.immediate) { try body(connection) } }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Runs `body` on one snapshot of the database, beside the writer and other readers.
    func read<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        do {
            let connection = try idleReaders.withLock { $0.popLast() } ?? openReader()
            defer {
                idleReaders.withLock { idle in
                    if idle.count < Self.idleReaderLimit { idle.append(connection) }
                }
            }
            return try connection.transaction(.deferred) { try body(connection) }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    private func checkOpen() throws(StoreError) {
        if closed.load(ordering: .acquiring) { throw .sqlite("the database \(path) is closed") }
    }

    private func openReader() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, create: false)
        try connection.execute(script: "PRAGMA query_only = ON")
        return connection
    }

    /// Folds the write-ahead log into the database file while the store stays open, as `close`
    /// does at its end: a daemon that runs for months (and loses power instead of closing) keeps
    /// its log small, the next write starting it anew within `walSizeLimit`. Passive: it waits for
    /// no reader (a detection reads for seconds) and no writer; what a reader still needs waits for
    /// the next call. On a connection of its own: in WAL mode a checkpoint and a write run side by
    /// side, and on a slow disk a fold takes seconds, which the radio's writes (a rotation's
    /// interval, a key's roll) would otherwise wait through.
    public func checkpoint() throws(StoreError) {
        try checkOpen()
        do {
            try checkpointer.withLock { connection in
                let folding = try connection ?? SQLiteConnection(path: path, create: false)
                connection = folding
                try folding.execute(script: "PRAGMA wal_checkpoint(PASSIVE)")
            }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Folds the write-ahead log into the database file and closes it; later calls fail.
    public func close() throws(StoreError) {
        closed.store(true, ordering: .releasing)
        do {
            try checkpointer.withLock { connection in
                try connection?.close()
                connection = nil
            }
            try writer.withLock { connection in
                try connection.execute(script: "PRAGMA wal_checkpoint(TRUNCATE)")
                try idleReaders.withLock { idle in
                    for reader in idle { try reader.close() }
                    idle.removeAll()
                }
                try connection.close()
            }
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    private static func prepareFile(at path: String) throws(StoreError) {
        try createDirectories(for: path)
        try narrowDirectory(of: path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        defer { Glibc.close(descriptor) }
        // An existing file keeps its mode unless we narrow it; SQLite gives -wal and -shm the same mode.
        guard fchmod(descriptor, 0o600) == 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
    }

    /// The database's directory holds keys: one of ours open to others becomes 0700; one that is
    /// not ours to narrow (shared, like /tmp) is refused rather than used.
    private static func narrowDirectory(of path: String) throws(StoreError) {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = stat()
        guard stat(directory, &status) == 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        let mode = status.st_mode & 0o7777
        guard mode & 0o077 != 0 else { return }
        if status.st_uid == geteuid() && mode & S_ISVTX == 0 && chmod(directory, 0o700) == 0 { return }
        throw .cannotOpen(path: path, reason: "its directory \(directory) is open to other users (mode \(String(mode, radix: 8))) "
                          + "and not this process's to narrow; use a directory of its own with mode 0700")
    }

    /// Creates the missing directories above `path`, each with mode 0700.
    private static func createDirectories(for path: String) throws(StoreError) {
        for slash in path.indices where path[slash] == "/" && slash != path.startIndex {
            let directory = String(path[..<slash])
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw .cannotOpen(path: path, reason: "cannot create the directory \(directory): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func translate(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? SQLiteError else { return .sqlite("\(error)") }
        if error.isCorrupt { return .corrupt(path: path, detail: error.message) }
        if error.isFull { return .full(path: path) }
        if error.isCannotOpen { return .cannotOpen(path: path, reason: error.message) }
        return .sqlite(error.description)
    }
}
