import Dispatch
import ENSQLite
import Foundation
import TestSupport
import Testing

@Suite struct SQLiteConnectionTests {
    let directory = TemporaryDirectory()

    func connection(_ name: String = "test.db", busyTimeoutMilliseconds: Int32 = 10_000) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: directory.file(name), busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try connection.execute(script: "PRAGMA journal_mode = WAL")
        return connection
    }

    @Test func everyTypeRoundTripsAndNullsAreOptional() throws {
        let db = try connection()
        try db.execute(script: "CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)")
        let values: [(Int64?, Double?, String?, [UInt8]?)] = [
            (.min, -1.5, "grüezi \u{0}mitenand", [0, 1, 255]),
            (.max, .infinity, "", []),
            (nil, nil, nil, nil),
        ]
        for (i, d, s, b) in values { try db.execute("INSERT INTO t VALUES (?, ?, ?, ?)", i, d, s, b) }
        let read = try db.fetchAll("SELECT i, d, s, b FROM t ORDER BY rowid") { row throws(SQLiteError) in
            (try row.column(0, as: Int64?.self), try row.column(1, as: Double?.self), try row.column(2, as: String?.self), try row.column(3, as: [UInt8]?.self))
        }
        #expect(read.count == 3)
        for (got, want) in zip(read, values) {
            #expect(got.0 == want.0 && got.1 == want.1 && got.2 == want.2 && got.3 == want.3)
        }
        #expect(try db.fetchOne(String.self, "SELECT typeof(b) FROM t WHERE rowid = 2") == "blob", "an empty blob is not NULL")
        #expect(try db.fetchOne(String.self, "SELECT typeof(s) FROM t WHERE rowid = 2") == "text", "empty text is not NULL")
        #expect(try db.fetchOne(Int.self, "SELECT length(CAST(s AS BLOB)) FROM t WHERE rowid = 1") == 17, "text with a NUL keeps all its bytes")

        try db.execute("INSERT INTO t (i) VALUES (?)", true)
        try db.execute("INSERT INTO t (i) VALUES (?)", UInt32.max)
        try db.execute("INSERT INTO t (i) VALUES (?)", Int8.min)
        #expect(try db.fetchAll(Int64.self, "SELECT i FROM t WHERE rowid > 3") == [1, 4_294_967_295, -128])
        #expect(try db.fetchOne(Bool.self, "SELECT i FROM t WHERE rowid = 4") == true)
    }

    @Test func aValueThatDoesNotFitIsAnErrorNamingTheColumn() throws {
        let db = try connection()
        try db.execute(script: "CREATE TABLE t (name TEXT, n INTEGER); INSERT INTO t VALUES (NULL, 300), ('x', -1)")
        expectError({ try db.fetchOne(String.self, "SELECT name FROM t WHERE n = 300") }) { error in
            "\(error)".contains("column name is NULL")
        }
        #expect(throws: SQLiteError.self) { try db.fetchOne(Int8.self, "SELECT n FROM t WHERE n = 300") }
        #expect(throws: SQLiteError.self) { try db.fetchOne(UInt32.self, "SELECT n FROM t WHERE n = -1") }
        #expect(try db.fetchOne(String?.self, "SELECT name FROM t WHERE n = 300") == .some(nil))
        #expect(try db.fetchOne(String?.self, "SELECT name FROM t WHERE n = 7") == nil, "no row")
    }

    @Test func errorsCarrySQLitesCodeMessageAndStatement() throws {
        let db = try connection()
        try db.execute(script: "CREATE TABLE t (n INTEGER NOT NULL CHECK (n > 0))")
        expectError({ try db.execute("INSERT INTO t VALUES (?)", 0) }) { error in
            guard let error = error as? SQLiteError else { return false }
            return error.code == 19 /* SQLITE_CONSTRAINT */ && error.extendedCode == 275 /* _CHECK */
                && error.sql == "INSERT INTO t VALUES (?)" && "\(error)".contains("CHECK constraint failed")
        }
        expectError({ try db.execute("SELECT x FROM nowhere") }) { error in "\(error)".contains("no such table: nowhere") }
        expectError({ try db.execute("INSERT INTO t VALUES (?)") }) { error in "\(error)".contains("0 arguments for 1 parameters") }
        expectError({ try db.execute("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)") }) { error in "\(error)".contains("more than one statement") }
        #expect(try db.fetchOne(Int.self, "SELECT count(*) FROM t;") == 0, "nothing of the refused script ran; a trailing semicolon is fine")
        let notADatabase = directory.file("junk.db")
        try Data(repeating: 0x5a, count: 4096).write(to: URL(fileURLWithPath: notADatabase))
        let junk = try SQLiteConnection(path: notADatabase)
        expectError({ try junk.execute(script: "PRAGMA journal_mode = WAL") }) { error in (error as? SQLiteError)?.isCorrupt == true }
        expectError({ try SQLiteConnection(path: directory.file("missing/x.db")) }) { error in (error as? SQLiteError)?.isCannotOpen == true }
    }

    @Test func aTransactionIsRolledBackWhenItsBodyThrows() throws {
        struct Refused: Error {}
        let db = try connection()
        try db.execute(script: "CREATE TABLE t (n INTEGER)")
        #expect(throws: Refused.self) {
            try db.transaction(.immediate) {
                try db.execute("INSERT INTO t VALUES (1)")
                throw Refused()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.fetchOne(Int.self, "SELECT count(*) FROM t") == 0)
        let inserted = try db.transaction(.immediate) { () throws -> Int64 in
            try db.execute("INSERT INTO t VALUES (2)")
            return db.lastInsertedRowID
        }
        #expect(inserted == 1 && db.changes == 1)
        #expect(try db.fetchAll(Int.self, "SELECT n FROM t") == [2])
    }

    /// A reader keeps its snapshot while a writer commits beside it (WAL).
    @Test func aReaderSeesOneSnapshot() throws {
        let writer = try connection(), reader = try connection()
        try writer.execute(script: "CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)")
        try reader.transaction(.deferred) {
            #expect(try reader.fetchOne(Int.self, "SELECT count(*) FROM t") == 1)
            try writer.execute("INSERT INTO t VALUES (2)")
            #expect(try reader.fetchOne(Int.self, "SELECT count(*) FROM t") == 1)
        }
        #expect(try reader.fetchOne(Int.self, "SELECT count(*) FROM t") == 2)
    }

    /// A second writer waits for the first up to its busy timeout, then reports SQLITE_BUSY.
    @Test func aBusyWriterWaitsThenGivesUp() throws {
        let first = try connection(), impatient = try connection(busyTimeoutMilliseconds: 100), patient = try connection()
        try first.execute(script: "CREATE TABLE t (n INTEGER); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
        let started = DispatchTime.now()
        expectError({ try impatient.transaction(.immediate) { try impatient.execute("INSERT INTO t VALUES (2)") } }) { error in
            (error as? SQLiteError)?.isBusy == true
        }
        #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds >= 100_000_000, "it waited for its timeout")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { try? first.execute(script: "COMMIT") }
        try patient.transaction(.immediate) { try patient.execute("INSERT INTO t VALUES (3)") }
        #expect(try patient.fetchAll(Int.self, "SELECT n FROM t ORDER BY n") == [1, 3])
    }

    /// Every statement is reset after use, also when reading stops half-way on an error, and
    /// finalized when the connection closes: sqlite3_close refuses a connection with live ones.
    @Test func statementsAreResetAndFinalized() throws {
        struct Stop: Error {}
        let db = try connection(), other = try connection()
        try db.execute(script: "CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3)")
        #expect(throws: SQLiteError.self) {
            try db.forEachRow("SELECT n FROM t") { row throws(SQLiteError) in
                _ = try row.column(0, as: String.self)  // a number reads as text; the next line stops
                throw SQLiteError.mismatch("stopped", sql: row.sql)
            }
        }
        // A statement left half-way would hold a read snapshot: the checkpoint could not finish.
        try other.execute("INSERT INTO t VALUES (4)")
        #expect(try other.fetchAll("PRAGMA wal_checkpoint(TRUNCATE)") { row throws(SQLiteError) in try row.column(0, as: Int.self) } == [0])
        _ = try db.fetchOne(Int.self, "SELECT count(*) FROM t")
        try db.close()
        expectError({ try db.execute("SELECT 1") }) { error in "\(error)".contains("is closed") }
    }
}
