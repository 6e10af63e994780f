import CENSQLite

/// A Swift value that binds to a statement's parameter. Optional values bind NULL when nil.
public protocol SQLiteBindable {
    /// Binds `self` to the 1-based parameter `index`; returns sqlite3's result code.
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32
}

/// A Swift value read from a column. Reading NULL as a non-optional type is an error; read it
/// as an Optional to accept NULL.
public protocol SQLiteColumnValue {
    init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError)
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .none: sqlite3_bind_null(statement, index)
        case .some(let value): value.bind(to: statement, at: index)
        }
    }
}

extension Optional: SQLiteColumnValue where Wrapped: SQLiteColumnValue {
    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        self = statement.isNull(index) ? nil : try Wrapped(column: index, of: statement)
    }
}

extension Int64: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, self) }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        try statement.requireValue(index, as: "an integer")
        self = sqlite3_column_int64(statement.handle, index)
    }
}

/// The narrower integers are read through Int64 and refused when out of their range: a value
/// that does not fit is an error, never a silently wrapped number.
protocol SQLiteNarrowInteger: FixedWidthInteger, SQLiteBindable, SQLiteColumnValue {}

extension SQLiteNarrowInteger {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, Int64(self)) }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        let wide = try Int64(column: index, of: statement)
        guard let value = Self(exactly: wide) else {
            throw .mismatch("column \(index) holds \(wide), out of the range of \(Self.self)", sql: statement.sql)
        }
        self = value
    }
}

extension Int: SQLiteNarrowInteger {}
extension Int32: SQLiteNarrowInteger {}
extension UInt32: SQLiteNarrowInteger {}
extension Int16: SQLiteNarrowInteger {}
extension Int8: SQLiteNarrowInteger {}
extension UInt8: SQLiteNarrowInteger {}

extension Bool: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, self ? 1 : 0) }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        self = try Int64(column: index, of: statement) != 0
    }
}

extension Double: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_double(statement, index, self) }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        try statement.requireValue(index, as: "a number")
        self = sqlite3_column_double(statement.handle, index)
    }
}

extension String: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        var text = self
        // Empty text must not be bound from a nil pointer: that binds NULL.
        return text.withUTF8 { censqlite_bind_text_copy(statement, index, $0.baseAddress ?? UnsafePointer(bitPattern: 1), Int32($0.count)) }
    }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        try statement.requireValue(index, as: "text")
        // sqlite3_column_text before sqlite3_column_bytes: the count is of the UTF-8 it returns.
        guard let text = sqlite3_column_text(statement.handle, index) else { self = ""; return }
        self = String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement.handle, index))), as: UTF8.self)
    }
}

/// A BLOB. (Text bound as a blob stays a blob: SQLite compares the two differently.)
extension [UInt8]: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        // A zero-length blob must not be bound from a nil pointer: that binds NULL.
        withUnsafeBytes { censqlite_bind_blob_copy(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count)) }
    }

    public init(column index: Int32, of statement: SQLiteStatement) throws(SQLiteError) {
        try statement.requireValue(index, as: "a blob")
        self = statement.blob(index).map { Array($0) } ?? []
    }
}
