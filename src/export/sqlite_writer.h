// trace.sqlite: the experiment as domain tables for SQL (schema in docs/sql.md). Static tables
// (processes, threads, QPs, connections, memory regions, drops, damage) come from the model; the
// large ones (op, completion, error) are streamed by the second pass: each file's sink batches its
// rows and inserts a batch at a time under one lock, inside a single transaction, so memory stays
// bounded and SQLite stays fast. The database is built under a temporary name and renamed at the end.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/records.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sigmatrace::exporter {

class SqliteExport : public analysis::ExperimentSink {
 public:
  ~SqliteExport() override;
  // Creates the schema and writes the model's tables. False (with *error) when the file cannot be made.
  bool open(const std::string& path, const analysis::ExperimentModel& model, std::string* error);
  std::unique_ptr<analysis::FileSink> open_file(uint32_t process_id) override;
  // Writes what depends on the finished aggregates, indexes, commits and renames into place.
  bool finish(const analysis::ExperimentModel& model, const analysis::Aggregates& agg, std::string* error);

  // An operation, with its own completion when the two are stored as one row.
  struct OpRow {
    analysis::OpRecord op;
    bool with_completion = false;
    analysis::CompletionRecord completion;
  };
  // Used by the file sinks (under the lock).
  void insert_ops(const std::vector<OpRow>& rows);
  void insert_completions(const std::vector<analysis::CompletionRecord>& rows);
  void insert_errors(const std::vector<analysis::ErrorRecord>& rows);
  void insert_doorbells(const std::vector<analysis::DoorbellRecord>& rows);
  void insert_launches(const std::vector<analysis::LaunchRecord>& rows);
  void insert_gpu_ops(const std::vector<std::pair<uint64_t, analysis::GpuWqeRecord>>& rows);  // (op_id, WQE)
  std::mutex& lock() { return mu_; }

 private:
  bool exec(const char* sql, std::string* error);
  int64_t cq_id(uint32_t process_id, uint64_t handle);
  sqlite3* db_ = nullptr;
  sqlite3_stmt* op_ = nullptr;
  sqlite3_stmt* completion_ = nullptr;
  sqlite3_stmt* error_ = nullptr;
  sqlite3_stmt* doorbell_ = nullptr;
  sqlite3_stmt* launch_ = nullptr;
  sqlite3_stmt* gpu_op_ = nullptr;
  std::string path_, tmp_path_;
  std::mutex mu_;
  int64_t start_ns_ = 0;                               // rows' times are relative to it
  std::map<std::pair<uint32_t, uint64_t>, int64_t> cq_ids_;  // (process, CQ handle) -> cq_id
  std::set<uint64_t> wc_opcodes_, wc_statuses_;        // the codes the lookup tables need
};

}  // namespace sigmatrace::exporter
