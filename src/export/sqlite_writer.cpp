// See sqlite_writer.h.
#include "export/sqlite_writer.h"

#include "export/sqlite_api.h"
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "analysis/ibv_names.h"
#include "export/sqlite_binder.h"
#include "export/sqlite_call_rows.h"
#include "export/sqlite_schema.h"
#include "export/sqlite_table_reader.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;

const SqlRow& op_row_defaults() {
  static const SqlRow d = [] {
    SqlRow r;
    for (int c = 0; c < 12; ++c) r.null();  // op_id ... status: no default
    r.i(0).i(0).i(0).i(0).i(0).i(0);        // c_opcode, c_byte_len, c_src_qp, c_flow, c_cq, c_imm
    r.i(0).i(1).i(0).i(0).null().null();    // layer, wr_count, is_call, c_vendor_err, c_thread, range_id
    r.null();                               // nccl_task_id
    return r;
  }();
  return d;
}

const SqlRow& completion_row_defaults() {
  static const SqlRow d = [] {
    SqlRow r;
    for (int c = 0; c < 10; ++c) r.null();  // completion_id ... flow_id: no default
    r.i(0).i(0).i(0).i(0);                  // cq, src_qp, imm_data, vendor_err
    return r;
  }();
  return d;
}

namespace {

constexpr size_t kBatchRows = 65536;
// The ids each file's leaf writers keep in order before writing: a WR is emitted when its
// completion is seen, so the rows of one file come out of order by at most the WRs outstanding
// at once.
constexpr size_t kSortWindowRows = 65536;
constexpr uint32_t kPageSize = 65536;
// Pages kept in front of the leaves for what SQLite writes (schema, model tables, errors,
// doorbells, launches): 16 MiB, a hole in the file where unused (then on the freelist).
constexpr uint32_t kReservedPages = 256;


bool mergeable_completion(const OpRecord& op, const CompletionRecord& c) {
  // Everything the completion view gives back must be recoverable from the merged row.
  return c.op_id == static_cast<int64_t>(op.op_id) && static_cast<int64_t>(c.completion_id) == op.completion_id &&
         op.dur_ns >= 0 && c.ts_ns == op.ts_ns + op.dur_ns && c.qp_id == op.qp_id && c.wr_id == op.wr_id &&
         static_cast<int64_t>(c.status) == op.status && (c.flow_id == 0 || c.flow_id == op.flow_id) &&
         (c.thread_id == op.thread_id || c.thread_id >= 0);
}

// One trace file's rows: op_row and completion_row go to its own sorted leaf pages (no lock); the
// small tables are batched and inserted under the lock.
class SqlFileSink : public FileSink {
 public:
  SqlFileSink(SqliteExport* db, uint32_t process_id)
      : db_(db), process_id_(process_id), ops_(db->scratch(), kSortWindowRows, &op_row_defaults()),
        completions_(db->scratch(), kSortWindowRows, &completion_row_defaults()) {}
  ~SqlFileSink() override { finish(); }
  // A WR's own completion follows it (the association emits the op, then the completion that
  // finished it): the op waits for it, and the two become one op_row row when the completion is
  // exactly the one the op names (see mergeable_completion).
  void op(const OpRecord& r) override {
    release_held();
    if (r.completion_id >= 0) {
      held_ = r, holding_ = true;
      return;
    }
    push_op(r, nullptr);
  }
  void completion(const CompletionRecord& r) override {
    if (holding_ && mergeable_completion(held_, r)) {
      holding_ = false;
      push_op(held_, &r);
      return;
    }
    release_held();
    SqlRow row = completion_row(r);
    if (!completions_.add(row)) late_.completions.push_back(row);
  }
  void error(const ErrorRecord& r) override {
    errors_.push_back(r);
    if (errors_.size() >= kBatchRows) flush();
  }
  void doorbell(const DoorbellRecord& r) override {
    doorbells_.push_back(r);
    if (doorbells_.size() >= kBatchRows) flush();
  }
  void launch(const LaunchRecord& r) override {
    launches_.push_back(r);
    if (launches_.size() >= kBatchRows) flush();
  }
  void range(const RangeRow& r) override {
    ranges_.push_back(r);
    if (ranges_.size() >= kBatchRows) flush();
  }
  void gpu_op(const OpRecord& op, const GpuWqeRecord& w) override {
    gpu_ops_.emplace_back(op.op_id, w);
    this->op(op);
  }
  void finish() override {
    if (finished_) return;
    finished_ = true;
    release_held();
    bool ok = ops_.finish() && completions_.finish();
    flush();
    std::lock_guard<std::mutex> g(db_->lock());
    db_->add_file_rows(process_id_, ops_.pages(), completions_.pages(), std::move(late_), cqs_, ok);
  }

 private:
  void push_op(const OpRecord& r, const CompletionRecord* c) {
    SqlRow row = op_row(r, c);
    if (!ops_.add(row)) late_.ops.push_back(row);
  }
  void release_held() {
    if (holding_) holding_ = false, push_op(held_, nullptr);
  }
  int64_t cq_number(uint64_t handle) { return cqs_.try_emplace(handle, static_cast<int64_t>(cqs_.size())).first->second; }
  void saw_completion_codes(uint64_t status, uint64_t opcode) {
    late_.wc_statuses.add(status);
    if (status == 0) late_.wc_opcodes.add(opcode);
  }
  // The columns of op_row and completion_row, in the order of sqlite_schema.h.
  SqlRow op_row(const OpRecord& r, const CompletionRecord* c) {
    SqlRow b;
    b.u(r.op_id).i(r.ts_ns - db_->start_ns());
    if (r.dur_ns >= 0) b.i(r.dur_ns); else b.null();
    b.id(r.thread_id).id(r.qp_id).i(r.op_class).u(r.bytes).id(r.peer_process_id).u(r.wr_id);
    if (r.flow_id) b.u(r.flow_id); else b.null();
    if (c) b.i(static_cast<int64_t>(c->completion_id - r.op_id)); else b.null();
    if (r.status != -1 || r.is_call) b.i(r.status); else b.null();
    if (c) {
      saw_completion_codes(c->status, c->opcode);
      b.u(c->opcode).u(c->byte_len).u(c->src_qp).i(c->flow_id != 0).i(cq_number(c->cq)).u(c->imm_data);
    } else {
      b.i(0).i(0).i(0).i(0).i(0).i(0);  // their defaults
    }
    b.i(layer_index(r.layer)).i(r.wr_count).i(r.is_call).u(c ? c->vendor_err : 0);
    if (c && c->thread_id != r.thread_id) b.i(c->thread_id); else b.null();
    b.id(r.range_id).id(r.nccl_task < 0 ? -1 : static_cast<int64_t>((uint64_t{r.process_id} << 40) | static_cast<uint64_t>(r.nccl_task)));
    return b;
  }
  SqlRow completion_row(const CompletionRecord& r) {
    saw_completion_codes(r.status, r.opcode);
    SqlRow b;
    b.u(r.completion_id).i(r.ts_ns - db_->start_ns()).id(r.thread_id).id(r.qp_id).u(r.wr_id).u(r.opcode).u(r.status).u(r.byte_len)
        .id(r.op_id);
    if (r.flow_id) b.u(r.flow_id); else b.null();
    b.i(cq_number(r.cq)).u(r.src_qp).u(r.imm_data).u(r.vendor_err);
    return b;
  }
  void flush() {
    if (errors_.empty() && doorbells_.empty() && launches_.empty() && gpu_ops_.empty() && ranges_.empty()) return;
    std::lock_guard<std::mutex> g(db_->lock());
    db_->insert_gpu_ops(gpu_ops_);
    db_->insert_errors(errors_);
    db_->insert_doorbells(doorbells_);
    db_->insert_launches(launches_);
    db_->insert_ranges(ranges_);
    errors_.clear(), doorbells_.clear(), launches_.clear(), gpu_ops_.clear(), ranges_.clear();
  }
  SqliteExport* db_;
  uint32_t process_id_;
  OpRecord held_;
  bool holding_ = false, finished_ = false;
  SortedLeafWriter ops_, completions_;
  SqliteExport::LateRows late_;
  std::map<uint64_t, int64_t> cqs_;  // CQ handle -> its number in this process
  std::vector<ErrorRecord> errors_;
  std::vector<DoorbellRecord> doorbells_;
  std::vector<RangeRow> ranges_;
  std::vector<LaunchRecord> launches_;
  std::vector<std::pair<uint64_t, GpuWqeRecord>> gpu_ops_;
};

const char* wqe_class_name(uint64_t c) { return c == 1 ? "data" : c == 2 ? "control" : nullptr; }

const char* launch_entry_name(uint64_t e) {
  static const char* const kNames[] = {"?", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuGraphLaunch",
                                       "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel"};
  return e < sizeof kNames / sizeof kNames[0] ? kNames[e] : "?";
}

const char* memory_kind_name(uint64_t k) { return k == 0 ? "host" : k == 1 ? "gpu" : "unknown"; }

// A shard's trace.sqlite, checked to be of this schema and experiment: the root pages of its
// per-event tables.
bool shard_root_pages(const std::string& path, int64_t start_ns, uint32_t* op_root, uint32_t* completion_root, std::string* error) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK;
  auto text = [&](const char* sql) {
    std::string v;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  if (ok && text("SELECT value FROM meta WHERE key = 'schema_version'") != "4") {
    *error = path + ": not a trace.sqlite of schema 4";
    ok = false;
  } else if (ok && text("SELECT value FROM meta WHERE key = 'start_ns'") != std::to_string(start_ns)) {
    *error = path + ": from an analysis of another experiment (its start differs)";
    ok = false;
  } else if (ok) {
    *op_root = static_cast<uint32_t>(std::strtoul(text("SELECT rootpage FROM sqlite_schema WHERE name = 'op_row'").c_str(), nullptr, 10));
    *completion_root = static_cast<uint32_t>(std::strtoul(text("SELECT rootpage FROM sqlite_schema WHERE name = 'completion_row'").c_str(), nullptr, 10));
    ok = *op_root && *completion_root;
    if (!ok) *error = path + ": no op_row or completion_row table";
  } else {
    *error = "cannot open " + path + ": " + sqlite3_errmsg(db);
  }
  sqlite3_close(db);
  return ok;
}

}  // namespace

SqliteExport::~SqliteExport() {
  for (sqlite3_stmt* s : {error_, doorbell_, launch_, gpu_op_, range_})
    if (s) sqlite3_finalize(s);
  if (db_) sqlite3_close(db_);
  scratch_.remove();  // after a failure: neither half is kept
  if (!tables_path_.empty()) std::remove(tables_path_.c_str());
}

int64_t SqliteExport::root_page(const char* table) {
  sqlite3_stmt* s = nullptr;
  int64_t page = -1;
  if (sqlite3_prepare_v2(db_, "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = ?", -1, &s, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW) page = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  return page;
}

bool SqliteExport::insert_late_rows(std::string* error) {
  late_row_count_ = late_.ops.size() + late_.completions.size();
  if (!late_row_count_) return true;
  if (sqlite3_open_v2(tmp_path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    *error = "cannot reopen " + tmp_path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  if (!exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-262144; BEGIN", error))
    return false;
  auto insert = [&](const char* sql, const std::vector<SqlRow>& rows) {
    sqlite3_stmt* s = nullptr;
    bool ok = sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK;
    for (size_t i = 0; ok && i < rows.size(); ++i) ok = Binder(s).row(rows[i]).step();
    if (!ok) *error = std::string("sqlite: ") + sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return ok;
  };
  if (!insert("INSERT INTO op_row VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", late_.ops) ||
      !insert("INSERT INTO completion_row VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", late_.completions) || !exec("COMMIT", error))
    return false;
  sqlite3_close(db_);
  db_ = nullptr;
  return true;
}

bool SqliteExport::exec(const char* sql, std::string* error) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  *error = std::string("sqlite: ") + (msg ? msg : "error");
  sqlite3_free(msg);
  return false;
}

bool SqliteExport::open(const std::string& path, const ExperimentModel& m, std::string* error) {
  path_ = path;
  tmp_path_ = path + ".tmp";
  std::remove(tmp_path_.c_str());
  start_ns_ = m.start_ns;
  // The workers' leaf pages go straight to the file that becomes trace.sqlite, after room for
  // what SQLite itself writes (built beside it, then copied in front: sqlite_btree.h).
  tables_path_ = path + ".tables.tmp";
  std::remove(tables_path_.c_str());
  if (!scratch_.open(tmp_path_, kPageSize, error, kReservedPages + 1)) return false;
  // No mutex in SQLite: every use is under mu_ (or before the pass).
  if (sqlite3_open_v2(tables_path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    *error = "cannot create " + tables_path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  // The file is rebuilt from the traces on failure: no journal, no syncing, nobody else opens it
  // while it is written; a large page cache, so that the B-trees' inner pages are not re-read.
  // Its page size is the one the per-event tables' leaf pages are built with (sqlite_btree.h).
  const std::string pragmas = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=" + std::to_string(kPageSize) +
                              "; PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-262144; PRAGMA temp_store=MEMORY;";
  if (!exec(pragmas.c_str(), error) ||
      !exec(kSqliteSchema, error) || !exec(sqlite_views(m.start_ns).c_str(), error) || !exec("BEGIN", error))
    return false;
  auto prepare = [&](const char* sql, sqlite3_stmt** s) {
    if (sqlite3_prepare_v2(db_, sql, -1, s, nullptr) == SQLITE_OK) return true;
    *error = std::string("sqlite: ") + sqlite3_errmsg(db_);
    return false;
  };
  if (!prepare("INSERT INTO error VALUES(?,?,?,?,?,?,?,?,?,?)", &error_) ||
      !prepare("INSERT INTO doorbell VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &doorbell_) ||
      !prepare("INSERT INTO range VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &range_) ||
      !prepare("INSERT INTO gpu_op VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &gpu_op_) ||
      !prepare("INSERT INTO kernel_launch VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &launch_))
    return false;

  sqlite3_stmt* s = nullptr;
  auto stmt = [&](const char* sql) {
    if (s) sqlite3_finalize(s);
    s = nullptr;
    sqlite3_prepare_v2(db_, sql, -1, &s, nullptr);
    return s;
  };
  stmt("INSERT INTO meta VALUES(?,?)");
  Binder(s).t("experiment").t(m.dir).step();
  Binder(s).t("start_ns").t(std::to_string(m.start_ns)).step();
  Binder(s).t("end_ns").t(std::to_string(m.end_ns)).step();
  Binder(s).t("schema_version").t("4").step();
  stmt("INSERT INTO layer_name VALUES(?,?)");
  for (unsigned i = 0; i < kLayerCount; ++i) Binder(s).i(i).t(kLayerNames[i]).step();  // op_row.layer: layer_index()
  stmt("INSERT INTO opcode_name VALUES(?,?)");
  for (unsigned i = 0; i < kOpClasses; ++i) Binder(s).i(i).t(op_class_name(i)).step();
  stmt("INSERT INTO host VALUES(?,?)");
  for (size_t h = 0; h < m.hosts.size(); ++h) Binder(s).i(static_cast<int64_t>(h)).t(m.hosts[h]).step();
  stmt("INSERT INTO process VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const ProcessRow& p : m.processes) {
    const FileSummary& f = *p.file;
    Binder(s).i(p.process_id).t(p.host).i(p.host_id).i(p.pid).id(p.rank).t(p.mode).t(f.meta_value("executable")).t(f.path)
        .i(f.has_file_end).t(f.has_file_end ? exit_reason_name(f.end_exit_reason) : "none").u(f.events)
        .u(f.events_dropped()).t(clock_source_name(p.clock.source)).u(p.clock.samples).d(p.clock.ns_per_tick)
        .d(p.clock.max_residual_ns).d(p.clock.rms_residual_ns).i(p.first_ns).i(p.last_ns).step();
  }
  stmt("INSERT INTO thread VALUES(?,?,?,?,?)");
  for (const ThreadRow& t : m.threads) Binder(s).i(t.thread_id).i(t.process_id).i(t.tid).t(t.name).u(t.events).step();
  stmt("INSERT INTO device VALUES(?,?,?,?,?,?)");
  for (const DeviceRow& d : m.devices) Binder(s).i(d.device_id).i(d.process_id).t(d.name).u(d.node_guid).u(d.context).i(d.open_ns).step();
  stmt("INSERT INTO port VALUES(?,?,?,?,?)");
  for (const DeviceRow& d : m.devices)
    for (const PortRow& p : d.ports) Binder(s).i(d.device_id).u(p.port).u(p.lid).t(gid_text(p.gid_prefix, p.gid_iface)).u(p.link_layer).step();
  stmt("INSERT INTO qp VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const QpRow& q : m.qps) {
    Binder b(s);
    b.i(q.qp_id).i(q.process_id);
    if (q.device_id != kNone) b.t(m.devices[static_cast<size_t>(q.device_id)].name); else b.null();
    b.id(q.device_id).u(q.qp_num).t(qp_type_name(q.qp_type)).t(qp_state_name(q.state)).u(q.port).u(q.local.lid)
        .t(gid_text(q.local.gid_prefix, q.local.gid_iface));
    if (q.has_remote) b.u(q.dest_qp_num).u(q.remote_lid).t(gid_text(q.remote_gid_prefix, q.remote_gid_iface));
    else b.null().null().null();
    b.id(q.remote_qp_id).id(q.connection_id).i(q.create_ns);
    if (q.destroy_ns) b.i(q.destroy_ns); else b.null();
    b.u(q.handle).i(q.gpu_initiated);
    if (q.gpu_initiated) b.id(q.gpu).u(q.sq_addr).u(q.log_sq_size).u(q.uar_page);
    else b.null().null().null().null();
    b.step();
  }
  stmt("INSERT INTO memory_region VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const MrRow& r : m.mrs) {
    Binder b(s);
    b.i(r.mr_id).i(r.process_id).u(r.handle).u(r.pd).u(r.addr).u(r.length).u(r.access).u(r.lkey).u(r.rkey)
        .t(memory_kind_name(r.memory_kind)).id(r.gpu_ordinal).i(r.reg_ns);
    if (r.dereg_ns) b.i(r.dereg_ns); else b.null();
    b.step();
  }
  stmt("INSERT INTO drops VALUES(?,?,?,?,?,?)");
  for (const ProcessRow& p : m.processes)
    for (const auto& [tid, t] : p.file->threads) {
      if (!t.events_dropped && !t.aggregate_overflow) continue;
      auto it = p.thread_of_tid.find(tid);
      Binder(s).i(p.process_id).id(it == p.thread_of_tid.end() ? -1 : it->second).i(tid).u(t.events_recorded)
          .u(t.events_dropped).u(t.aggregate_overflow).step();
    }
  stmt("INSERT INTO damage VALUES(?,?,?,?,?)");
  for (const ProcessRow& p : m.processes) {
    for (const auto& l : p.file->losses) Binder(s).i(p.process_id).t(p.file->path).u(l.offset).u(l.bytes).t(l.reason).step();
    if (p.file->chunks_missing)
      Binder(s).i(p.process_id).t(p.file->path).null().null().t(std::to_string(p.file->chunks_missing) + " chunks missing").step();
    if (p.file->undecodable_chunks)
      Binder(s).i(p.process_id).t(p.file->path).null().null()
          .t(std::to_string(p.file->undecodable_chunks) + " chunks partly undecodable").step();
  }
  stmt("INSERT INTO skipped_file VALUES(?)");
  for (const std::string& r : m.scan.skipped) Binder(s).t(r).step();
  stmt("INSERT INTO provider VALUES(?,?,?,?)");
  for (const ProcessRow& p : m.processes)
    for (const ProviderState& pr : p.file->providers) Binder(s).i(p.process_id).t(pr.name).i(pr.enabled).t(pr.detail).step();
  if (s) sqlite3_finalize(s);
  return true;
}

std::unique_ptr<FileSink> SqliteExport::open_file(uint32_t process_id) { return std::make_unique<SqlFileSink>(this, process_id); }

void SqliteExport::add_file_rows(uint32_t process_id, const std::vector<LeafPage>& ops, const std::vector<LeafPage>& completions,
                                 LateRows late, const std::map<uint64_t, int64_t>& cqs, bool ok) {
  rows_ok_ &= ok;
  op_leaves_.insert(op_leaves_.end(), ops.begin(), ops.end());
  completion_leaves_.insert(completion_leaves_.end(), completions.begin(), completions.end());
  late_.ops.insert(late_.ops.end(), late.ops.begin(), late.ops.end());
  late_.completions.insert(late_.completions.end(), late.completions.begin(), late.completions.end());
  late_.wc_opcodes.add(late.wc_opcodes);
  late_.wc_statuses.add(late.wc_statuses);
  for (const auto& [handle, number] : cqs) cqs_.push_back({process_id, number, handle});
}

bool SqliteExport::add_shard_rows(const std::string& shard_db, std::string* error) {
  uint32_t roots[2];
  if (!shard_root_pages(shard_db, start_ns_, &roots[0], &roots[1], error)) return false;
  std::vector<LeafPage> leaves[2];
  for (int t = 0; t < 2; ++t) {
    // One process's rows per page: the processes of different shards interleave in rowid order
    // (op ids are process_id << 40 | n), and the leaves of one table must not overlap.
    std::unique_ptr<SortedLeafWriter> w;
    int64_t process = -1;
    bool written = true;
    auto end_process = [&] {
      if (!w) return;
      written = w->finish() && written;
      leaves[t].insert(leaves[t].end(), w->pages().begin(), w->pages().end());
      w.reset();
    };
    const bool read = read_table_rows(shard_db, roots[t], [&](int64_t rowid, const uint8_t* record, uint32_t size) {
      if (rowid >> 40 != process) end_process(), process = rowid >> 40, w = std::make_unique<SortedLeafWriter>(&scratch_, 0);
      if (w->add_sorted(rowid, record, size)) return true;
      *error = shard_db + ": " + (scratch_.write_errno() ? std::string("cannot write ") + tmp_path_ + ": " + std::strerror(scratch_.write_errno())
                                                         : "rows out of rowid order");
      return false;
    }, error);
    end_process();
    if (!read) return false;
    if (!written) {
      *error = "cannot write " + tmp_path_ + ": " + std::strerror(scratch_.write_errno() ? scratch_.write_errno() : EIO);
      return false;
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  op_leaves_.insert(op_leaves_.end(), leaves[0].begin(), leaves[0].end());
  completion_leaves_.insert(completion_leaves_.end(), leaves[1].begin(), leaves[1].end());
  return true;
}

bool SqliteExport::add_shard_tables(const std::string& shard_db, std::string* error) {
  // ATTACH cannot be done inside the transaction open() began.
  if (!exec("COMMIT", error)) return false;
  sqlite3_stmt* s = nullptr;
  bool ok = sqlite3_prepare_v2(db_, "ATTACH DATABASE ? AS shard", -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_bind_text(s, 1, shard_db.c_str(), -1, SQLITE_TRANSIENT) == SQLITE_OK && sqlite3_step(s) == SQLITE_DONE;
  if (!ok) *error = "cannot attach " + shard_db + ": " + sqlite3_errmsg(db_);
  sqlite3_finalize(s);
  if (!ok) return false;
  ok = exec("BEGIN; INSERT INTO main.error SELECT * FROM shard.error; INSERT INTO main.doorbell SELECT * FROM shard.doorbell;"
            "INSERT INTO main.kernel_launch SELECT * FROM shard.kernel_launch; INSERT INTO main.gpu_op SELECT * FROM shard.gpu_op;"
            "INSERT INTO main.range SELECT * FROM shard.range; COMMIT",
            error);
  auto each_row = [&](const char* sql, auto&& f) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK) {
      *error = std::string("sqlite: ") + sqlite3_errmsg(db_);
      return false;
    }
    while (sqlite3_step(q) == SQLITE_ROW) f(q);
    sqlite3_finalize(q);
    return true;
  };
  ok = ok && each_row("SELECT process_id, number, handle FROM shard.cq", [&](sqlite3_stmt* q) {
    cqs_.push_back({static_cast<uint32_t>(sqlite3_column_int64(q, 0)), sqlite3_column_int64(q, 1), static_cast<uint64_t>(sqlite3_column_int64(q, 2))});
  });
  ok = ok && each_row("SELECT code FROM shard.wc_opcode_name", [&](sqlite3_stmt* q) { late_.wc_opcodes.add(static_cast<uint64_t>(sqlite3_column_int64(q, 0))); });
  ok = ok && each_row("SELECT code FROM shard.wc_status_name", [&](sqlite3_stmt* q) { late_.wc_statuses.add(static_cast<uint64_t>(sqlite3_column_int64(q, 0))); });
  std::string detach_error;
  const bool detached = exec("DETACH DATABASE shard", &detach_error);
  if (ok && !detached) *error = detach_error;
  return ok && detached && exec("BEGIN", error);
}

void SqliteExport::insert_errors(const std::vector<ErrorRecord>& rows) {
  for (const ErrorRecord& r : rows)
    Binder(error_).u(r.error_id).i(r.ts_ns).i(r.process_id).id(r.thread_id).t(r.layer).t(r.kind).t(r.what).u(r.object)
        .i(r.error).id(r.qp_id).step();
}

void SqliteExport::insert_doorbells(const std::vector<DoorbellRecord>& rows) {
  for (const DoorbellRecord& r : rows) {
    Binder b(doorbell_);
    b.u(r.doorbell_id).i(r.ts_ns).i(r.process_id).id(r.qp_id).id(r.gpu).u(r.qp_num).u(r.producer_index).u(r.delta).u(r.uar_page)
        .i(r.blueflame);
    if (r.kernel) b.t(*r.kernel); else b.null();
    if (const char* c = wqe_class_name(r.wqe_class)) b.t(c).u(r.wqes); else b.null().null();
    b.id(r.range_id).step();
  }
}

void SqliteExport::insert_gpu_ops(const std::vector<std::pair<uint64_t, GpuWqeRecord>>& rows) {
  for (const auto& [op_id, w] : rows) {
    Binder b(gpu_op_);
    b.u(op_id).id(w.gpu);
    if (w.kernel) b.t(*w.kernel); else b.null();
    b.id(w.doorbell_id);
    b.u(w.wqe_index).u(w.opcode).u(w.opmod).u(w.flags).u(w.remote_addr).u(w.rkey).u(w.local_addr).u(w.lkey).u(w.sges)
        .i(w.inline_data).u(w.imm).u(w.swap_add).u(w.compare).step();
  }
}

void SqliteExport::insert_launches(const std::vector<LaunchRecord>& rows) {
  for (const LaunchRecord& r : rows) {
    Binder b(launch_);
    b.u(r.launch_id).i(r.ts_ns).i(r.process_id).id(r.thread_id).id(r.gpu).u(r.function);
    if (r.name) b.t(*r.name); else b.null();
    b.t(launch_entry_name(r.entry)).u(r.grid[0]).u(r.grid[1]).u(r.grid[2]).u(r.block[0]).u(r.block[1]).u(r.block[2]).u(r.stream)
        .i(r.result).id(r.range_id).step();
  }
}

bool SqliteExport::finish(const ExperimentModel& m, const Aggregates& agg, std::string* error) {
  sqlite3_stmt* s = nullptr;
  if (!rows_ok_) {
    *error = "cannot write " + tmp_path_ + ": " + std::strerror(scratch_.write_errno() ? scratch_.write_errno() : EIO);
    return false;
  }
  sqlite3_prepare_v2(db_, "INSERT INTO cq VALUES(?,?,?)", -1, &s, nullptr);
  for (const CqNumber& c : cqs_) Binder(s).i(c.process_id).i(c.number).u(c.handle).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO wc_opcode_name VALUES(?,?)", -1, &s, nullptr);
  for (uint64_t c : late_.wc_opcodes.codes()) Binder(s).u(c).t(wc_opcode_name(c)).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO wc_status_name VALUES(?,?)", -1, &s, nullptr);
  for (uint64_t c : late_.wc_statuses.codes()) Binder(s).u(c).t(wc_status_name(c)).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO gpu VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const GpuRow& g : agg.gpus) {
    const DoorbellCounters& d = g.doorbells;
    Binder(s).i(g.process_id).id(g.gpu).u(g.qps).u(d.doorbells).u(d.wqebbs).i(d.first_ns).i(d.last_ns).u(g.ops.total_ops())
        .u(g.ops.bytes_out()).u(g.ops.bytes_read()).u(d.recovered).u(d.lost_wqebbs).u(d.damaged).u(d.unread_wqebbs).step();
  }
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO qp_doorbells VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const QpRow& q : m.qps) {
    const DoorbellCounters& d = agg.qp_doorbells[q.qp_id];
    if (q.gpu_initiated || d.doorbells)
      Binder(s).i(q.qp_id).u(d.doorbells).u(d.wqebbs).u(d.blueflame).i(d.first_ns).i(d.last_ns).u(d.data_doorbells)
          .u(d.control_doorbells).i(d.wqes_read).u(d.recovered).u(d.recovered_wqebbs).u(d.lost_wqebbs).u(d.damaged)
          .u(d.unread_wqebbs).u(d.index_errors).u(d.batches).u(d.wait_ns).u(d.max_wait_ns).u(d.from_record).step();
  }
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO connection VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const ConnectionRow& c : m.connections) {
    const QpRow& a = m.qps[c.qp_a];
    const QpRow& b = m.qps[c.qp_b];
    const ConnectionFlows f = connection_flows(c, agg);
    Binder(s).i(c.connection_id).i(c.qp_a).i(c.qp_b).i(a.process_id).i(b.process_id).t(m.processes[a.process_id].host)
        .t(m.processes[b.process_id].host).t(qp_type_name(a.qp_type)).u(f.ops_a_to_b).u(f.bytes_a_to_b).u(f.ops_b_to_a)
        .u(f.bytes_b_to_a).step();
  }
  sqlite3_finalize(s);
  insert_nccl_tasks(db_, m, agg);
  sqlite3_prepare_v2(db_, "INSERT INTO qp_stats VALUES(?,?,?,?)", -1, &s, nullptr);
  for (const QpRow& q : m.qps)
    for (unsigned i = 0; i < kOpClasses; ++i)
      if (agg.qp[q.qp_id].ops[i] || agg.qp[q.qp_id].bytes[i])
        Binder(s).i(q.qp_id).t(op_class_name(i)).u(agg.qp[q.qp_id].ops[i]).u(agg.qp[q.qp_id].bytes[i]).step();
  sqlite3_finalize(s);
  for (sqlite3_stmt** st : {&error_, &doorbell_, &launch_, &gpu_op_, &range_}) {
    sqlite3_finalize(*st);
    *st = nullptr;
  }
  if (!exec(kSqliteIndexes, error)) return false;
  int64_t op_root = root_page("op_row"), completion_root = root_page("completion_row");
  if (op_root <= 0 || completion_root <= 0) {
    *error = "sqlite: no root page for op_row or completion_row";
    return false;
  }
  if (!exec("COMMIT", error)) return false;
  sqlite3_close(db_);
  db_ = nullptr;
  // The per-event tables' pages go in with SQLite closed; the rows that came too late for them
  // are then inserted as usual. When SQLite wrote more than the room left for it (millions of
  // doorbells), its file becomes the database and the leaves are copied after its pages; so too
  // when the leaves are fewer than that room, which a small experiment's file would otherwise
  // carry as free pages (copying them costs less than the room is large).
  struct stat st {};
  const bool fits = ::stat(tables_path_.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) / kPageSize <= kReservedPages;
  if (fits && scratch_.slots() > kReservedPages) {
    if (!assemble_in_place(tables_path_, scratch_, {{static_cast<uint32_t>(op_root), std::move(op_leaves_)},
                                                    {static_cast<uint32_t>(completion_root), std::move(completion_leaves_)}}, error))
      return false;
    scratch_.release();
    std::remove(tables_path_.c_str());
  } else {
    if (!append_table_btree(tables_path_, static_cast<uint32_t>(op_root), scratch_, std::move(op_leaves_), error) ||
        !append_table_btree(tables_path_, static_cast<uint32_t>(completion_root), scratch_, std::move(completion_leaves_), error))
      return false;
    scratch_.remove();
    if (std::rename(tables_path_.c_str(), tmp_path_.c_str()) != 0) {
      *error = "cannot rename " + tables_path_ + " to " + tmp_path_;
      return false;
    }
  }
  if (!insert_late_rows(error)) return false;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    *error = "cannot rename " + tmp_path_ + " to " + path_;
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter
