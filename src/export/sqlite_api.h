// The part of SQLite's C API sigmatrace uses, declared here so that trace.sqlite and `sigmatrace sql`
// build wherever SQLite's runtime library is, headers or not (the GPU machines have libsqlite3.so.0
// but not libsqlite3-dev). The declarations follow sqlite3.h, whose C interface SQLite keeps stable;
// tests/export/sqlite_api_test.cpp includes both where sqlite3.h exists, and does not compile if any
// declaration or constant here differs from it.
#pragma once

extern "C" {
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef long long int sqlite_int64;
typedef sqlite_int64 sqlite3_int64;
typedef void (*sqlite3_destructor_type)(void*);

int sqlite3_open(const char* filename, sqlite3** ppDb);
int sqlite3_open_v2(const char* filename, sqlite3** ppDb, int flags, const char* zVfs);
int sqlite3_close(sqlite3*);
const char* sqlite3_errmsg(sqlite3*);
int sqlite3_exec(sqlite3*, const char* sql, int (*callback)(void*, int, char**, char**), void*, char** errmsg);
void sqlite3_free(void*);
int sqlite3_prepare_v2(sqlite3* db, const char* zSql, int nByte, sqlite3_stmt** ppStmt, const char** pzTail);
int sqlite3_step(sqlite3_stmt*);
int sqlite3_reset(sqlite3_stmt* pStmt);
int sqlite3_finalize(sqlite3_stmt* pStmt);
int sqlite3_bind_int64(sqlite3_stmt*, int, sqlite3_int64);
int sqlite3_bind_null(sqlite3_stmt*, int);
int sqlite3_bind_double(sqlite3_stmt*, int, double);
int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void (*)(void*));
int sqlite3_column_count(sqlite3_stmt* pStmt);
const char* sqlite3_column_name(sqlite3_stmt*, int N);
int sqlite3_column_type(sqlite3_stmt*, int iCol);
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt*, int iCol);
double sqlite3_column_double(sqlite3_stmt*, int iCol);
const unsigned char* sqlite3_column_text(sqlite3_stmt*, int iCol);
}

// The constants, spelled as sqlite3.h spells them (a redefinition must be token for token).
#define SQLITE_OK           0
#define SQLITE_ROW         100
#define SQLITE_DONE        101
#define SQLITE_OPEN_READONLY         0x00000001
#define SQLITE_OPEN_READWRITE        0x00000002
#define SQLITE_OPEN_CREATE           0x00000004
#define SQLITE_OPEN_NOMUTEX          0x00008000
#define SQLITE_INTEGER  1
#define SQLITE_FLOAT    2
#define SQLITE_NULL     5
#define SQLITE_STATIC      ((sqlite3_destructor_type)0)
#define SQLITE_TRANSIENT   ((sqlite3_destructor_type)-1)
