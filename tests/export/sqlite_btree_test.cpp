// The per-event tables' B-trees written directly in SQLite's file format (export/sqlite_btree.h):
// the same rows through the leaf writers and through SQLite's own INSERT must read back
// identically, and SQLite's integrity check must find nothing wrong with the file.
#include <gtest/gtest.h>
#include "export/sqlite_api.h"
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "export/sqlite_btree.h"

namespace {

using sigmatrace::exporter::append_table_btree;
using sigmatrace::exporter::assemble_in_place;
using sigmatrace::exporter::LeafPage;
using sigmatrace::exporter::LeafScratchFile;
using sigmatrace::exporter::SortedLeafWriter;
using sigmatrace::exporter::SqlRow;

constexpr const char* kTable = "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER)";

class Db {
 public:
  // page_size 0: open the existing file.
  Db(const std::string& path, unsigned page_size) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    if (page_size) exec("PRAGMA journal_mode=OFF; PRAGMA page_size=" + std::to_string(page_size) + "; " + kTable + ";");
  }
  ~Db() { close(); }
  void close() {
    if (db_) sqlite3_close(db_), db_ = nullptr;
  }
  void exec(const std::string& sql) {
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
    sqlite3_free(msg);
  }
  std::vector<std::string> column(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      out.push_back(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
    sqlite3_finalize(s);
    return out;
  }
  int64_t root_page() { return std::stoll(column("SELECT rootpage FROM sqlite_schema WHERE name = 't'").at(0)); }
  void insert(const std::vector<SqlRow>& rows) {
    if (rows.empty()) return;
    exec("BEGIN");
    sqlite3_stmt* s = nullptr;
    std::string sql = "INSERT INTO t VALUES(?";
    for (unsigned c = 1; c < rows[0].count; ++c) sql += ",?";
    ASSERT_EQ(sqlite3_prepare_v2(db_, (sql + ")").c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    for (const SqlRow& r : rows) {
      sqlite3_reset(s);
      for (unsigned c = 0; c < r.count; ++c)
        r.is_null(c) ? sqlite3_bind_null(s, static_cast<int>(c) + 1) : sqlite3_bind_int64(s, static_cast<int>(c) + 1, r.value[c]);
      ASSERT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(db_);
    }
    sqlite3_finalize(s);
    exec("COMMIT");
  }

 private:
  sqlite3* db_ = nullptr;
};

// Values of every integer size SQLite stores (0 and 1 without a body, 1–8 bytes, negative), and NULLs.
SqlRow row(int64_t id, std::mt19937_64& rng) {
  static const int64_t kEdges[] = {0, 1, -1, 127, -128, 128, 32767, -32769, 8388607, -8388609, INT32_MAX, INT32_MIN,
                                   (int64_t{1} << 47) - 1, -(int64_t{1} << 47), int64_t{1} << 47, INT64_MAX, INT64_MIN};
  SqlRow r;
  r.i(id);
  for (int c = 0; c < 5; ++c) {
    uint64_t pick = rng() % 24;
    if (pick < 17) r.i(kEdges[pick]);
    else if (pick < 20) r.null();
    else r.i(static_cast<int64_t>(rng()) >> (rng() % 64));
  }
  return r;
}

struct Experiment {
  std::filesystem::path dir;
  Experiment() {
    dir = std::filesystem::temp_directory_path() / ("sqlite_btree_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
  }
  ~Experiment() { std::filesystem::remove_all(dir); }
};

// Writes `per_writer` rows for each of `writers` id ranges (process_id << 40), each range's rows
// shuffled within `disorder` positions, through leaf writers of `page_size` pages, and the same
// rows through INSERT; returns the rows the writers handed back as late. in_place: the leaves are
// written where they stay, after `in_place` pages kept for SQLite's (assemble_in_place);
// otherwise to a scratch file and copied after SQLite's pages (append_table_btree).
size_t compare_with_insert(unsigned page_size, unsigned writers, size_t per_writer, size_t disorder, size_t window,
                           size_t* leaf_pages = nullptr, uint32_t in_place = 0) {
  Experiment e;
  std::mt19937_64 rng(page_size * 31 + writers);
  std::vector<std::vector<SqlRow>> streams(writers);
  std::vector<SqlRow> all;
  for (unsigned w = 0; w < writers; ++w) {
    for (size_t k = 0; k < per_writer; ++k) streams[w].push_back(row((int64_t{w} << 40) | static_cast<int64_t>(k * 3 + 7), rng));
    for (size_t k = 0; disorder > 1 && k + disorder <= per_writer; k += disorder)
      std::shuffle(streams[w].begin() + static_cast<std::ptrdiff_t>(k), streams[w].begin() + static_cast<std::ptrdiff_t>(k + disorder), rng);
    all.insert(all.end(), streams[w].begin(), streams[w].end());
  }

  const std::string ours = (e.dir / "ours.sqlite").string(), theirs = (e.dir / "theirs.sqlite").string();
  Db reference(theirs, page_size);
  reference.insert(all);

  const std::string tables = in_place ? (e.dir / "tables.sqlite").string() : ours;
  Db target(tables, page_size);
  int64_t root = target.root_page();
  target.exec("CREATE TABLE other(x); INSERT INTO other VALUES('SQLite''s own pages come first')");
  target.close();
  LeafScratchFile scratch;
  std::string error;
  EXPECT_TRUE(scratch.open(in_place ? ours : (e.dir / "rows.tmp").string(), page_size, &error, in_place + 1)) << error;
  std::vector<LeafPage> leaves;
  std::vector<SqlRow> late;
  for (unsigned w = 0; w < writers; ++w) {  // writers in reverse order: the assembly sorts their pages
    SortedLeafWriter writer(&scratch, window);
    for (const SqlRow& r : streams[writers - 1 - w])
      if (!writer.add(r)) late.push_back(r);
    EXPECT_TRUE(writer.finish());
    leaves.insert(leaves.end(), writer.pages().begin(), writer.pages().end());
  }
  if (leaf_pages) *leaf_pages = leaves.size();
  if (in_place) {
    EXPECT_TRUE(assemble_in_place(tables, scratch, {{static_cast<uint32_t>(root), leaves}}, &error)) << error;
    scratch.release();
  } else {
    EXPECT_TRUE(append_table_btree(ours, static_cast<uint32_t>(root), scratch, leaves, &error)) << error;
  }

  Db check(ours, 0);
  EXPECT_EQ(check.column("SELECT x FROM other"), std::vector<std::string>{"SQLite's own pages come first"});
  if (!late.empty()) check.insert(late);
  EXPECT_EQ(check.column("PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  const std::string dump = "SELECT printf('%d|%s|%s|%s|%s|%s', id, quote(a), quote(b), quote(c), quote(d), quote(e)) FROM t ORDER BY id";
  std::vector<std::string> got = check.column(dump), want = reference.column(dump);
  EXPECT_EQ(got.size(), all.size());
  EXPECT_TRUE(got == want) << "rows differ from SQLite's own";
  // Lookups by rowid go through the interior pages.
  for (size_t k = 0; k < all.size(); k += all.size() / 17 + 1) {
    std::string id = std::to_string(all[k].value[0]);
    EXPECT_EQ(check.column("SELECT count(*) FROM t WHERE id = " + id), std::vector<std::string>{"1"}) << id;
  }
  return late.size();
}

TEST(SqliteBtree, RowsReadBackAsSqliteWroteThemWithSeveralInteriorLevels) {
  size_t leaves = 0;
  // 512-byte pages hold a few rows each: 90,000 rows make thousands of leaves and three levels above them.
  EXPECT_EQ(compare_with_insert(512, 3, 30000, 50, 1000, &leaves), 0u);
  EXPECT_GT(leaves, 5000u);
}

TEST(SqliteBtree, LargePagesAsTraceSqliteUsesThem) { EXPECT_EQ(compare_with_insert(65536, 4, 20000, 200, 4096), 0u); }

TEST(SqliteBtree, RowsTooLateForTheWindowAreHandedBackAndInsertedAfterwards) {
  // Shuffled over 5,000 positions with a window of 100: many rows arrive after higher ones were written.
  EXPECT_GT(compare_with_insert(4096, 2, 20000, 5000, 100), 0u);
}

TEST(SqliteBtree, OneLeafBecomesTheRoot) {
  size_t leaves = 0;
  EXPECT_EQ(compare_with_insert(65536, 1, 50, 1, 16, &leaves), 0u);
  EXPECT_EQ(leaves, 1u);
}

TEST(SqliteBtree, NoRowsLeavesTheEmptyTable) {
  size_t leaves = 0;
  EXPECT_EQ(compare_with_insert(4096, 2, 0, 1, 16, &leaves), 0u);
  EXPECT_EQ(leaves, 0u);
  // In place, the room kept for SQLite is all free and the file still as long as its page count.
  EXPECT_EQ(compare_with_insert(4096, 2, 0, 1, 16, &leaves, 8), 0u);
  EXPECT_EQ(leaves, 0u);
}

TEST(SqliteBtree, LeavesWrittenWhereTheyStayWithSqlitesPagesInFrontAndTheRestFree) {
  size_t leaves = 0;
  EXPECT_EQ(compare_with_insert(512, 2, 20000, 30, 500, &leaves, 40), 0u);  // 37 or so free pages: one trunk at 512 B
  EXPECT_GT(leaves, 1000u);
  EXPECT_EQ(compare_with_insert(512, 2, 2000, 30, 500, nullptr, 400), 0u);  // hundreds free: a chain of trunks
  EXPECT_EQ(compare_with_insert(65536, 3, 20000, 100, 4096, nullptr, 256), 0u);  // as trace.sqlite does
  EXPECT_EQ(compare_with_insert(4096, 1, 30, 1, 16, &leaves, 8), 0u);  // one leaf: copied to the root, its page freed
  EXPECT_EQ(leaves, 1u);
}

TEST(SqliteBtree, InPlaceRefusesWhenSqliteNeedsMoreThanTheRoomKeptForIt) {
  Experiment e;
  const std::string tables = (e.dir / "tables.sqlite").string();
  Db db(tables, 512);
  db.exec("CREATE TABLE big(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
          "INSERT INTO big SELECT printf('%0100d', i) FROM n");
  int64_t root = db.root_page();
  db.close();
  LeafScratchFile scratch;
  std::string error;
  ASSERT_TRUE(scratch.open((e.dir / "ours.sqlite").string(), 512, &error, 9));
  EXPECT_FALSE(assemble_in_place(tables, scratch, {{static_cast<uint32_t>(root), {}}}, &error));
  EXPECT_NE(error.find("more pages than the space reserved"), std::string::npos) << error;
}

TEST(SqliteBtree, OverlappingWritersAreRefused) {
  Experiment e;
  const std::string path = (e.dir / "t.sqlite").string();
  Db db(path, 4096);
  int64_t root = db.root_page();
  db.close();
  LeafScratchFile scratch;
  std::string error;
  ASSERT_TRUE(scratch.open((e.dir / "rows.tmp").string(), 4096, &error));
  std::mt19937_64 rng(1);
  std::vector<LeafPage> leaves;
  for (int w = 0; w < 2; ++w) {  // both writers hold ids 10..19
    SortedLeafWriter writer(&scratch, 16);
    for (int64_t id = 10; id < 20; ++id) ASSERT_TRUE(writer.add(row(id, rng)));
    ASSERT_TRUE(writer.finish());
    leaves.insert(leaves.end(), writer.pages().begin(), writer.pages().end());
  }
  EXPECT_FALSE(append_table_btree(path, static_cast<uint32_t>(root), scratch, leaves, &error));
  EXPECT_NE(error.find("overlap"), std::string::npos) << error;
}

}  // namespace

// A table whose last columns have DEFAULTs: the leaf writer leaves out a record's trailing columns
// that equal them (a NULL default matches only NULL), and SQLite must read them back as the
// defaults, exactly as the rows it inserted itself with every column.
TEST(SqliteBtree, TrailingColumnsAtTheirDefaultsAreLeftOutAndReadBackAsTheDefaults) {
  Experiment e;
  const std::string table = "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b INTEGER DEFAULT 0, c INTEGER DEFAULT 1, d INTEGER)";
  SqlRow defaults;
  defaults.null().null().i(0).i(1).null();
  std::vector<SqlRow> rows;
  for (int64_t k = 0; k < 3000; ++k) {
    SqlRow r;
    r.i(k).i(k * 1000);
    r.i(k % 3 == 0 ? 5 : 0).i(k % 5 == 0 ? 7 : 1);
    if (k % 7 == 0) r.i(k % 2 ? 9 : 0); else r.null();  // 0 is not NULL's default
    rows.push_back(r);
  }
  SqlRow all_default;
  all_default.i(1).i(300).i(0).i(1).null();
  uint8_t record[sigmatrace::exporter::kMaxRecordBytes];
  EXPECT_EQ(sigmatrace::exporter::encode_sqlite_record(all_default, record, &defaults), 1u + 2u + 2u);  // header: size, id, a; a: 2 bytes
  EXPECT_EQ(sigmatrace::exporter::encode_sqlite_record(all_default, record), 1u + 5u + 2u);

  const std::string ours = (e.dir / "ours.sqlite").string(), theirs = (e.dir / "theirs.sqlite").string();
  Db reference(theirs, 0);
  reference.exec("PRAGMA page_size=4096; " + table);
  reference.insert(rows);
  Db target(ours, 0);
  target.exec("PRAGMA journal_mode=OFF; PRAGMA page_size=4096; " + table);
  const int64_t root = target.root_page();
  target.close();
  LeafScratchFile scratch;
  std::string error;
  ASSERT_TRUE(scratch.open((e.dir / "rows.tmp").string(), 4096, &error)) << error;
  SortedLeafWriter writer(&scratch, 64, &defaults);
  for (const SqlRow& r : rows) ASSERT_TRUE(writer.add(r));
  ASSERT_TRUE(writer.finish());
  ASSERT_TRUE(append_table_btree(ours, static_cast<uint32_t>(root), scratch, writer.pages(), &error)) << error;

  Db check(ours, 0);
  EXPECT_EQ(check.column("PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  const std::string dump = "SELECT printf('%d|%s|%s|%s|%s', id, quote(a), quote(b), quote(c), quote(d)) FROM t ORDER BY id";
  std::vector<std::string> got = check.column(dump);
  EXPECT_EQ(got.size(), rows.size());
  EXPECT_TRUE(got == reference.column(dump)) << "rows differ from SQLite's own";
}
