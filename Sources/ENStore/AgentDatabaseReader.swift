import ENCore
import ENSQLite
import Glibc

/// An agent database read by someone other than the agent (`enctl detect offline --db`): opened
/// read-only, never created, migrated, switched to WAL or given another mode, and read in any
/// schema version the project has shipped.
public enum AgentDatabaseReader {
    /// Every sighting in the database at `path`. From the index the database keeps of its
    /// sightings (schema v10) when it agrees with the sighting table: the index's connection
    /// then stays open in its read transaction, and the few sightings a detection finds are read
    /// by id from that same snapshot. From a pass over every sighting row otherwise (an older
    /// database, or one whose index is stale: the agent rebuilds it, a read-only reader cannot).
    public static func sightingIndex(at path: String) throws(StoreError) -> SightingIndex {
        // A -wal file beside it: a connection has it open (or one died), and what it wrote may be
        // in the log, which only mode=ro reads. Else the file is all there is, and immutable
        // reads it without locks and without creating -shm and -wal files in its directory
        // (which may be read-only, or shared like /tmp).
        let mode: SQLiteConnection.ReadOnlyMode = access(path + "-wal", F_OK) == 0 ? .readOnly : .immutable
        do {
            let connection = try SQLiteConnection(readingOnly: path, mode)
            try connection.execute(script: "PRAGMA query_only = ON")
            try connection.execute(script: "BEGIN DEFERRED")
            let version = try Schema.version(of: connection, path: path)
            if version >= Schema.sightingBatchVersion, try SightingBatches.isConsistent(in: connection) {
                return try SightingBatches.index(in: connection, resolver: SnapshotSightings(connection, version: version))
            }
            defer { try? connection.close() }
            return try AgentStore.sightingIndex(in: connection, version: version)
        } catch {
            throw AgentStore.translate(error, path: path)
        }
    }
}
