#ifndef CENSQLITE_SHIM_H
#define CENSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro that Swift does not import: sqlite3 copies the bytes. */
static inline int censqlite_bind_blob_copy(sqlite3_stmt *statement, int index, const void *bytes, int count) {
    return sqlite3_bind_blob(statement, index, bytes, count, SQLITE_TRANSIENT);
}
static inline int censqlite_bind_text_copy(sqlite3_stmt *statement, int index, const void *utf8, int count) {
    return sqlite3_bind_text(statement, index, (const char *)utf8, count, SQLITE_TRANSIENT);
}
#endif
