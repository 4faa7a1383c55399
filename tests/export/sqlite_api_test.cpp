// src/export/sqlite_api.h, the declarations of SQLite's C API that let trace.sqlite be built without
// SQLite's headers, held against sqlite3.h: both in this translation unit (built with -Werror), so
// a function declared with another type or a constant spelled otherwise fails the build; then the
// declarations used against the library itself.
#include "export/sqlite_api.h"  // first: sqlite3.h's own definitions must repeat its constants exactly

#include <sqlite3.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

TEST(SqliteApi, TheDeclarationsAreSqlitesOwnAndWorkAgainstItsLibrary) {
  static_assert(std::is_same_v<sqlite3_int64, sqlite_int64> && sizeof(sqlite3_int64) == 8);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(i INTEGER, d REAL, s TEXT, n INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?)", -1, &s, nullptr), SQLITE_OK);
  sqlite3_bind_int64(s, 1, sqlite3_int64{1} << 40);
  sqlite3_bind_double(s, 2, 2.5);
  sqlite3_bind_text(s, 3, "rank 0", -1, SQLITE_TRANSIENT);
  sqlite3_bind_null(s, 4);
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
  EXPECT_EQ(sqlite3_reset(s), SQLITE_OK);
  sqlite3_finalize(s);
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT i, d, s, n FROM t", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_count(s), 4);
  EXPECT_EQ(std::string(sqlite3_column_name(s, 2)), "s");
  EXPECT_EQ(sqlite3_column_type(s, 0), SQLITE_INTEGER);
  EXPECT_EQ(sqlite3_column_int64(s, 0), sqlite3_int64{1} << 40);
  EXPECT_EQ(sqlite3_column_type(s, 1), SQLITE_FLOAT);
  EXPECT_EQ(sqlite3_column_double(s, 1), 2.5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 2))), "rank 0");
  EXPECT_EQ(sqlite3_column_type(s, 3), SQLITE_NULL);
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  char* error = nullptr;
  EXPECT_NE(sqlite3_exec(db, "SELECT nope FROM t", nullptr, nullptr, &error), SQLITE_OK);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(std::string(error), std::string(sqlite3_errmsg(db)));
  sqlite3_free(error);
  EXPECT_EQ(sqlite3_close(db), SQLITE_OK);
  sqlite3* ro = nullptr;
  EXPECT_NE(sqlite3_open_v2("/nonexistent/x.sqlite", &ro, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_close(ro);
  sqlite3* plain = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &plain), SQLITE_OK);
  sqlite3_close(plain);
  EXPECT_EQ(SQLITE_STATIC, nullptr);
}
