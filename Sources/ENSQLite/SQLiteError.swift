import CENSQLite

/// A failure reported by sqlite3, or a value that does not fit the type it is read as.
public struct SQLiteError: Error, Equatable, CustomStringConvertible {
    /// sqlite3's extended result code (`SQLITE_CONSTRAINT_CHECK`, …); 0 when the error is ours.
    public let extendedCode: Int32
    public let message: String
    /// The statement that failed, when there was one.
    public let sql: String?

    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`SQLITE_FULL`, `SQLITE_CORRUPT`, …).
    public var code: Int32 { extendedCode & 0xff }

    public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    public var isFull: Bool { code == SQLITE_FULL }
    public var isCannotOpen: Bool { code == SQLITE_CANTOPEN || code == SQLITE_PERM || code == SQLITE_READONLY }
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }

    public var description: String {
        let name = String(cString: sqlite3_errstr(extendedCode))
        let statement = sql.map { ": \($0)" } ?? ""
        return message == name ? "\(message)\(statement)" : "\(message) (\(name))\(statement)"
    }

    /// The connection's last error, after a call that returned `result`.
    static func last(_ connection: OpaquePointer?, result: Int32, sql: String? = nil) -> SQLiteError {
        let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? result
        // sqlite3_extended_errcode is the last error of the connection; a result that is not an
        // error code (a misuse found before the call) keeps its own.
        return SQLiteError(extendedCode: extended & 0xff == result & 0xff ? extended : result, message: message, sql: sql)
    }

    /// A column read as a type its value does not fit: a NULL read as a non-optional value, a
    /// number out of the type's range.
    public static func mismatch(_ detail: String, sql: String) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_MISMATCH, message: detail, sql: sql)
    }
}
