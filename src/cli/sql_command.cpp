// `sigmatrace sql DIR "SELECT ..."`: runs SQL on DIR/trace.sqlite (read-only) and prints the result
// as an aligned table (default), CSV (--csv) or a JSON array of objects (--json).
#include "export/sqlite_api.h"
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis_run/analysis_run.h"
#include "cli/commands.h"

namespace sigmatrace::cli {
namespace {

struct SqlOptions {
  std::string dir, query;
  bool csv = false, json = false;
};

std::string csv_field(const std::string& s, bool is_null) {
  if (is_null) return "";
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

int run_sql(const SqlOptions& o) {
  std::string path = o.dir + "/" + exporter::kSqliteFile;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    print_error("sql: no " + path + " (run `sigmatrace analyze " + o.dir + "` first)");
    return 1;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    print_error("sql: cannot open " + path + ": " + sqlite3_errmsg(db));
    sqlite3_close(db);
    return 1;
  }
  const char* tail = o.query.c_str();
  int status = 0;
  bool first_statement = true;
  nlohmann::json all = nlohmann::json::array();
  while (tail && *tail) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, tail, -1, &s, &tail) != SQLITE_OK) {
      print_error(std::string("sql: ") + sqlite3_errmsg(db));
      status = 1;
      break;
    }
    if (!s) continue;  // whitespace or comment
    int cols = sqlite3_column_count(s);
    std::vector<std::string> names;
    for (int c = 0; c < cols; ++c) names.push_back(sqlite3_column_name(s, c));
    std::vector<std::vector<std::pair<std::string, bool>>> rows;  // (text, is_null)
    nlohmann::json rows_json = nlohmann::json::array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::pair<std::string, bool>> row;
      nlohmann::json obj = nlohmann::json::object();
      for (int c = 0; c < cols; ++c) {
        int type = sqlite3_column_type(s, c);
        const unsigned char* t = sqlite3_column_text(s, c);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "", type == SQLITE_NULL);
        if (type == SQLITE_NULL) obj[names[c]] = nullptr;
        else if (type == SQLITE_INTEGER) obj[names[c]] = sqlite3_column_int64(s, c);
        else if (type == SQLITE_FLOAT) obj[names[c]] = sqlite3_column_double(s, c);
        else obj[names[c]] = row.back().first;
      }
      if (o.json) rows_json.push_back(std::move(obj));
      else rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      print_error(std::string("sql: ") + sqlite3_errmsg(db));
      sqlite3_finalize(s);
      status = 1;
      break;
    }
    sqlite3_finalize(s);
    if (cols == 0) continue;
    if (o.json) {
      all.push_back(std::move(rows_json));
      continue;
    }
    if (!first_statement) std::printf("\n");
    first_statement = false;
    if (o.csv) {
      for (int c = 0; c < cols; ++c) std::printf("%s%s", c ? "," : "", csv_field(names[c], false).c_str());
      std::printf("\n");
      for (const auto& r : rows) {
        for (int c = 0; c < cols; ++c) std::printf("%s%s", c ? "," : "", csv_field(r[c].first, r[c].second).c_str());
        std::printf("\n");
      }
      continue;
    }
    std::vector<size_t> w(cols);
    for (int c = 0; c < cols; ++c) w[c] = names[c].size();
    for (const auto& r : rows)
      for (int c = 0; c < cols; ++c) w[c] = std::max(w[c], r[c].second ? 4 : r[c].first.size());
    for (int c = 0; c < cols; ++c) std::printf("%s%-*s", c ? "  " : "", static_cast<int>(w[c]), names[c].c_str());
    std::printf("\n");
    for (int c = 0; c < cols; ++c) std::printf("%s%s", c ? "  " : "", std::string(w[c], '-').c_str());
    std::printf("\n");
    for (const auto& r : rows) {
      for (int c = 0; c < cols; ++c)
        std::printf("%s%-*s", c ? "  " : "", static_cast<int>(w[c]), r[c].second ? "NULL" : r[c].first.c_str());
      std::printf("\n");
    }
  }
  if (o.json && status == 0) std::printf("%s\n", (all.size() == 1 ? all[0] : all).dump(1).c_str());
  sqlite3_close(db);
  return status;
}

}  // namespace

CommandRunner add_sql_command(CLI::App& app) {
  auto o = std::make_shared<SqlOptions>();
  CLI::App* sub = app.add_subcommand("sql", "run SQL on an analysed experiment's trace.sqlite (see docs/sql.md)");
  sub->add_option("dir", o->dir, "experiment directory (analysed)")->required();
  sub->add_option("query", o->query, "SQL, e.g. \"SELECT opcode, SUM(bytes) FROM op GROUP BY opcode\"")->required();
  auto* csv = sub->add_flag("--csv", o->csv, "print CSV");
  sub->add_flag("--json", o->json, "print a JSON array of row objects")->excludes(csv);
  return [o] { return run_sql(*o); };
}

}  // namespace sigmatrace::cli
