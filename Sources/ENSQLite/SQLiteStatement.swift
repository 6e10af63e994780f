import CENSQLite

/// A prepared statement of one connection, finalized when it goes. Used by one thread at a time:
/// its connection hands it out only inside its own calls.
public final class SQLiteStatement {
    let handle: OpaquePointer
    public let sql: String

    init(connection: OpaquePointer, sql: String) throws(SQLiteError) {
        var handle: OpaquePointer?
        var rest = ""
        let result = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            defer { rest = tail.map { String(cString: $0) } ?? "" }
            return sqlite3_prepare_v3(connection, text, -1, 0, &handle, &tail)
        }
        guard result == SQLITE_OK, let handle else {
            sqlite3_finalize(handle)
            throw SQLiteError.last(connection, result: result, sql: sql)
        }
        // sqlite3 prepares the first statement only: a second one would be silently skipped.
        guard rest.allSatisfy({ $0.isWhitespace || $0 == ";" }) else {
            sqlite3_finalize(handle)
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "more than one statement (run a script with execute(script:))", sql: sql)
        }
        self.handle = handle
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `arguments` to its parameters, in order.
    public func bind(_ arguments: [any SQLiteBindable]) throws(SQLiteError) {
        reset()
        let expected = sqlite3_bind_parameter_count(handle)
        guard arguments.count == expected else {
            throw SQLiteError(extendedCode: SQLITE_RANGE, message: "\(arguments.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            let result = argument.bind(to: handle, at: Int32(offset + 1))
            guard result == SQLITE_OK else { throw SQLiteError.last(sqlite3_db_handle(handle), result: result, sql: sql) }
        }
    }

    /// Steps to the next row: true when there is one, false when the statement is done.
    public func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result:
            let error = SQLiteError.last(sqlite3_db_handle(handle), result: result, sql: sql)
            reset()
            throw error
        }
    }

    /// Ends the current run (releasing its read snapshot) and clears the bindings.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// The current row's column `index` (0-based) as `V`.
    public func column<V: SQLiteColumnValue>(_ index: Int32, as type: V.Type = V.self) throws(SQLiteError) -> V {
        try V(column: index, of: self)
    }

    public func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// The current row's blob in column `index`, in place: valid until the next step or reset.
    /// nil for NULL and for a zero-length blob.
    public func blob(_ index: Int32) -> UnsafeRawBufferPointer? {
        guard let bytes = sqlite3_column_blob(handle, index) else { return nil }
        return UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// The current row's integer in column `index` without a NULL check, for reads where the
    /// schema says NOT NULL and every row counts.
    public func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    func requireValue(_ index: Int32, as kind: String) throws(SQLiteError) {
        guard index >= 0 && index < sqlite3_column_count(handle) else {
            throw SQLiteError(extendedCode: SQLITE_RANGE, message: "no column \(index)", sql: sql)
        }
        guard !isNull(index) else {
            let name = sqlite3_column_name(handle, index).map { String(cString: $0) } ?? "\(index)"
            throw .mismatch("column \(name) is NULL where \(kind) is expected", sql: sql)
        }
    }
}
