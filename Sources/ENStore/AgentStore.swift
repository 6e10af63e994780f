import ENCore
import Foundation
import GRDB

/// The agent's SQLite database: keys, sightings, processed key files, exposure results,
/// settings, consent and test results.
///
/// WAL mode with one writer and concurrent readers (a GRDB `DatabasePool`). The file is created
/// with mode 0600 in a 0700 directory, because it holds the device's keys and everyone it met.
/// Deleted rows are overwritten (`secure_delete`), so retention really forgets.
public final class AgentStore: Sendable {
    public let path: String
    let pool: DatabasePool

    /// Opens (creating when absent) the database at `path`, migrates it and checks its integrity.
    public init(path: String) throws(StoreError) {
        self.path = path
        try Self.prepareFile(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try pool.read { db in
                let problems = try String.fetchAll(db, sql: "PRAGMA quick_check")
                if problems != ["ok"] {
                    throw StoreError.corrupt(path: path, detail: problems.prefix(3).joined(separator: "; "))
                }
            }
            let migrator = Schema.migrator
            if try pool.read({ try migrator.hasBeenSuperseded($0) }) { throw StoreError.newerSchema(path: path) }
            try migrator.migrate(pool)
        } catch let error as StoreError {
            throw error
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    /// Runs `body` in one write transaction.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try pool.write(body) } catch { throw Self.translate(error, path: path) }
    }

    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do { return try pool.read(body) } catch { throw Self.translate(error, path: path) }
    }

    /// Folds the write-ahead log into the database file and closes it; later calls fail.
    public func close() throws(StoreError) {
        do {
            _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
            try pool.close()
        } catch {
            throw Self.translate(error, path: path)
        }
    }

    private static func prepareFile(at path: String) throws(StoreError) {
        try createDirectories(for: path)
        try narrowDirectory(of: path)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        defer { Foundation.close(descriptor) }
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
        guard let error = error as? DatabaseError else { return .sqlite("\(error)") }
        switch error.resultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return .corrupt(path: path, detail: error.message ?? "\(error.resultCode)")
        case .SQLITE_FULL:
            return .full(path: path)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY:
            return .cannotOpen(path: path, reason: error.message ?? "\(error.resultCode)")
        default:
            return .sqlite(error.message ?? "\(error)")
        }
    }
}
