// See analysis_test_util.h.
#include "analysis_test_util.h"

#include <gtest/gtest.h>
#include "export/sqlite_api.h"

#include <fstream>
#include <sstream>

#include "support/timeline_check.h"

namespace sigmatrace::test {

exporter::AnalysisRun analyze_dir(const std::string& dir, unsigned threads) {
  exporter::AnalysisOptions o;
  o.dir = dir;
  o.threads = threads;
  exporter::AnalysisRun run = exporter::run_analysis(o);
  // Every timeline the analysis writes holds Perfetto's invariants (support/timeline_check.h).
  if (run.ok && o.perfetto) expect_valid_timeline(dir);
  return run;
}

std::vector<std::string> sql_rows(const std::string& db, const std::string& query) {
  std::vector<std::string> rows;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db;
    sqlite3_close(h);
    return rows;
  }
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(h, query.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "SQL error: " << sqlite3_errmsg(h) << " in " << query;
    sqlite3_close(h);
    return rows;
  }
  while (sqlite3_step(s) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      if (c) row += "|";
      const unsigned char* t = sqlite3_column_text(s, c);
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    rows.push_back(row);
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  return rows;
}

int64_t sql_int(const std::string& db, const std::string& query) {
  std::vector<std::string> rows = sql_rows(db, query);
  if (rows.empty() || rows[0] == "NULL") {
    ADD_FAILURE() << "no value from " << query;
    return -999;
  }
  return std::stoll(rows[0]);
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

}  // namespace sigmatrace::test
