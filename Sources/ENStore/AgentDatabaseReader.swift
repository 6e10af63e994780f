import ENCore
import ENSQLite
import Glibc

/// An agent database read by someone other than the agent (`enctl detect offline --db`): opened
/// read-only, never created, migrated, switched to WAL or given another mode, and read in any
/// schema version the project has shipped.
public enum AgentDatabaseReader {
    /// Every sighting in the database at `path`.
    public static func sightingIndex(at path: String) throws(StoreError) -> SightingIndex {
        // A -wal file beside it: a connection has it open (or one died), and what it wrote may be
        // in the log, which only mode=ro reads. Else the file is all there is, and immutable
        // reads it without locks and without creating -shm and -wal files in its directory
        // (which may be read-only, or shared like /tmp).
        let mode: SQLiteConnection.ReadOnlyMode = access(path + "-wal", F_OK) == 0 ? .readOnly : .immutable
        do {
            let connection = try SQLiteConnection(readingOnly: path, mode)
            try connection.execute(script: "PRAGMA query_only = ON")
            return try connection.transaction(.deferred) {
                return try AgentStore.sightingIndex(in: connection, version: try Schema.version(of: connection, path: path))
            }
        } catch {
            throw AgentStore.translate(error, path: path)
        }
    }
}
