import CENSQLite

/// One connection to a SQLite database file, with its prepared statements cached by SQL.
///
/// Sendable by hand: sqlite3 opens it in multi-thread mode (`SQLITE_OPEN_NOMUTEX`), where a
/// connection and its statements may move between threads but serve one thread at a time. Its
/// owner ensures that (ENStore's `AgentStore`: the writer under a Mutex, each reader taken out of
/// the idle pool by one caller). Serialized mode would make that hold by itself, at the price of a
/// mutex around every call: reading 4 million sightings into the matching index took a quarter
/// longer.
public final class SQLiteConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    public let path: String
    private var statements = [String: SQLiteStatement]()

    /// Opens the database at `path`, creating it when `create` is set. sqlite3 waits up to
    /// `busyTimeoutMilliseconds` for another connection's lock before it reports SQLITE_BUSY.
    public convenience init(path: String, create: Bool = true, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        try self.init(path: path, name: path, flags: SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    /// How a connection that only reads treats the files beside the database.
    public enum ReadOnlyMode: Sendable {
        /// `mode=ro`: sees what another connection has in the write-ahead log, and uses (or
        /// creates, where it may) the -shm file for that.
        case readOnly
        /// `immutable=1`: the file alone, no locks, no files created; for a database no one
        /// has open (it would not see another's log, nor notice its writes).
        case immutable
    }

    /// Opens the database at `path` only to read: sqlite3 writes nothing to it, never creates it,
    /// and changes no mode.
    public convenience init(readingOnly path: String, _ mode: ReadOnlyMode, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        // A URI filename: the path percent-encoded, all but what RFC 3986 leaves unreserved and the slashes.
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/".utf8)
        let encoded = path.utf8.map { unreserved.contains($0) ? String(UnicodeScalar($0)) : "%" + String($0, radix: 16, uppercase: true).leftPadded(to: 2) }.joined()
        let uri = "file:" + encoded + (mode == .immutable ? "?immutable=1" : "?mode=ro")
        try self.init(path: path, name: uri, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    private init(path: String, name: String, flags: Int32, busyTimeoutMilliseconds: Int32) throws(SQLiteError) {
        self.path = path
        var handle: OpaquePointer?
        let result = sqlite3_open_v2(name, &handle, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nil)
        guard result == SQLITE_OK else {
            let error = SQLiteError.last(handle, result: result)
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Finalizes the statements and closes the connection; calls after it fail with SQLITE_MISUSE.
    public func close() throws(SQLiteError) {
        statements.removeAll()
        let result = sqlite3_close(handle)
        guard result == SQLITE_OK else { throw SQLiteError.last(handle, result: result) }
        handle = nil
    }

    private func open() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "the database \(path) is closed") }
        return handle
    }

    /// Runs one or more statements without arguments (a migration's script, a PRAGMA).
    public func execute(script sql: String) throws(SQLiteError) {
        let handle = try open()
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard result == SQLITE_OK else {
            throw SQLiteError(extendedCode: sqlite3_extended_errcode(handle),
                              message: message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result)), sql: sql)
        }
    }

    /// The cached statement for `sql`, prepared on first use, with `arguments` bound.
    public func statement(_ sql: String, _ arguments: [any SQLiteBindable] = []) throws(SQLiteError) -> SQLiteStatement {
        let statement: SQLiteStatement
        if let cached = statements[sql] {
            statement = cached
        } else {
            statement = try SQLiteStatement(connection: try open(), sql: sql)
            statements[sql] = statement
        }
        try statement.bind(arguments)
        return statement
    }

    /// Runs one statement that returns no rows.
    public func execute(_ sql: String, _ arguments: any SQLiteBindable...) throws(SQLiteError) {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        while try statement.step() {}
    }

    /// Calls `body` on each row of `sql`; the statement is reset afterwards, also on error.
    public func forEachRow(_ sql: String, _ arguments: [any SQLiteBindable] = [],
                           _ body: (SQLiteStatement) throws(SQLiteError) -> Void) throws(SQLiteError) {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        while try statement.step() { try body(statement) }
    }

    /// Every row of `sql`, each made by `row`.
    public func fetchAll<Row>(_ sql: String, _ arguments: any SQLiteBindable...,
                              row: (SQLiteStatement) throws(SQLiteError) -> Row) throws(SQLiteError) -> [Row] {
        var rows = [Row]()
        try forEachRow(sql, arguments) { statement throws(SQLiteError) in rows.append(try row(statement)) }
        return rows
    }

    /// The first column of every row of `sql`.
    public func fetchAll<V: SQLiteColumnValue>(_ type: V.Type, _ sql: String, _ arguments: any SQLiteBindable...) throws(SQLiteError) -> [V] {
        var values = [V]()
        try forEachRow(sql, arguments) { statement throws(SQLiteError) in values.append(try statement.column(0)) }
        return values
    }

    /// The first column of the first row of `sql`, or nil when it returns no row. (A NULL in
    /// that column is also nil when `V` is an Optional: read `V?` as `V??` to tell them apart.)
    public func fetchOne<V: SQLiteColumnValue>(_ type: V.Type, _ sql: String, _ arguments: any SQLiteBindable...) throws(SQLiteError) -> V? {
        let statement = try statement(sql, arguments)
        defer { statement.reset() }
        return try statement.step() ? try statement.column(0) as V : nil
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    public var lastInsertedRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    public var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    public enum TransactionKind: String, Sendable {
        /// Takes the write lock at once, so the transaction never fails half-way on a lock it
        /// could not upgrade to (sqlite3 does not wait for that one).
        case immediate = "BEGIN IMMEDIATE"
        /// Reads from one snapshot of the database, taken at the first read.
        case deferred = "BEGIN DEFERRED"
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws
    /// (its error is rethrown).
    public func transaction<Result>(_ kind: TransactionKind, _ body: () throws -> Result) throws -> Result {
        try execute(script: kind.rawValue)
        let result: Result
        do {
            result = try body()
        } catch {
            rollBack()
            throw error
        }
        do {
            try execute(script: "COMMIT")
        } catch {
            rollBack()
            throw error
        }
        return result
    }

    /// A failed COMMIT, or SQLITE_FULL during the body, may have rolled back already.
    private func rollBack() {
        if isInTransaction { try? execute(script: "ROLLBACK") }  // a failed ROLLBACK leaves nothing more to undo
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: Swift.max(0, width - count)) + self }
}
