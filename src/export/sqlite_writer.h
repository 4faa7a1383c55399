// trace.sqlite: the experiment as domain tables for SQL (schema in docs/sql.md). Static tables
// (processes, threads, QPs, connections, memory regions, drops, damage) come from the model. The
// per-event tables (op_row, completion_row) are streamed by the second pass: each file's sink
// packs its rows into SQLite leaf pages itself, without a lock (sqlite_btree.h), and the tables'
// B-trees are assembled at the end. The other streamed tables (errors, doorbells, launches, GPU
// WQEs) are batched and inserted under one lock, inside a single transaction. The database is
// built under a temporary name and renamed at the end.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/records.h"
#include "export/sqlite_btree.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sigmatrace::exporter {

// The DEFAULTs of op_row's and completion_row's columns, in order, NULL where a column has none
// (as in sqlite_schema.h): the leaf writers leave out a record's trailing columns that equal them.
const SqlRow& op_row_defaults();
const SqlRow& completion_row_defaults();

class SqliteExport : public analysis::ExperimentSink {
 public:
  ~SqliteExport() override;
  // Creates the schema and writes the model's tables. False (with *error) when the file cannot be made.
  bool open(const std::string& path, const analysis::ExperimentModel& model, std::string* error);
  std::unique_ptr<analysis::FileSink> open_file(uint32_t process_id) override;
  // Merging shards (shard_merge.h) in place of a second pass, between open() and finish(): a
  // shard's op_row and completion_row rows, copied as they are stored (thread-safe: several
  // shards at once), then its other per-event tables (errors, doorbells, launches, GPU WQEs, CQ
  // numbers; one shard at a time). False with *error when the shard's trace.sqlite is not of this
  // schema or experiment, or cannot be read.
  bool add_shard_rows(const std::string& shard_db, std::string* error);
  bool add_shard_tables(const std::string& shard_db, std::string* error);
  // Writes what depends on the finished aggregates, indexes, commits and renames into place.
  bool finish(const analysis::ExperimentModel& model, const analysis::Aggregates& agg, std::string* error);

  // The codes a lookup table needs (completion opcodes, statuses): a bit each below 256.
  struct CodeSet {
    uint64_t bits[4] = {};
    std::set<uint64_t> others;
    void add(uint64_t c) { c < 256 ? void(bits[c / 64] |= uint64_t{1} << (c % 64)) : void(others.insert(c)); }
    void add(const CodeSet& o) {
      for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
      others.insert(o.others.begin(), o.others.end());
    }
    std::vector<uint64_t> codes() const {
      std::vector<uint64_t> v;
      for (uint64_t c = 0; c < 256; ++c) if ((bits[c / 64] >> (c % 64)) & 1) v.push_back(c);
      v.insert(v.end(), others.begin(), others.end());
      return v;
    }
  };
  // Rows that came too late for their file's leaf pages (inserted with SQLite at the end), and the
  // codes a file's rows used.
  struct LateRows {
    std::vector<SqlRow> ops, completions;
    CodeSet wc_opcodes, wc_statuses;
  };
  // Used by the file sinks (under the lock).
  void add_file_rows(uint32_t process_id, const std::vector<LeafPage>& ops, const std::vector<LeafPage>& completions,
                     LateRows late, const std::map<uint64_t, int64_t>& cqs, bool ok);
  void insert_errors(const std::vector<analysis::ErrorRecord>& rows);
  void insert_doorbells(const std::vector<analysis::DoorbellRecord>& rows);
  void insert_launches(const std::vector<analysis::LaunchRecord>& rows);
  void insert_ranges(const std::vector<analysis::RangeRow>& rows);
  void insert_gpu_ops(const std::vector<std::pair<uint64_t, analysis::GpuWqeRecord>>& rows);  // (op_id, WQE)
  std::mutex& lock() { return mu_; }
  LeafScratchFile* scratch() { return &scratch_; }
  int64_t start_ns() const { return start_ns_; }
  // Rows inserted by SQLite after the leaf pages were assembled: out of order beyond the ordering ring (sqlite_btree.h).
  uint64_t late_rows() const { return late_row_count_; }

 private:
  bool exec(const char* sql, std::string* error);
  int64_t root_page(const char* table);
  bool insert_late_rows(std::string* error);
  sqlite3* db_ = nullptr;
  sqlite3_stmt* error_ = nullptr;
  sqlite3_stmt* doorbell_ = nullptr;
  sqlite3_stmt* launch_ = nullptr;
  sqlite3_stmt* gpu_op_ = nullptr;
  sqlite3_stmt* range_ = nullptr;
  std::string path_, tmp_path_, tables_path_;
  std::mutex mu_;
  int64_t start_ns_ = 0;  // rows' times are relative to it
  LeafScratchFile scratch_;
  std::vector<LeafPage> op_leaves_, completion_leaves_;
  LateRows late_;
  bool rows_ok_ = true;
  uint64_t late_row_count_ = 0;
  struct CqNumber {
    uint32_t process_id;
    int64_t number;
    uint64_t handle;
  };
  std::vector<CqNumber> cqs_;
};

}  // namespace sigmatrace::exporter
