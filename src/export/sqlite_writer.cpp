// See sqlite_writer.h.
#include "export/sqlite_writer.h"

#include <sqlite3.h>

#include <cstdio>

#include "analysis/ibv_names.h"
#include "export/sqlite_schema.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;

namespace {

constexpr size_t kBatchRows = 65536;

// Binds a statement's parameters in order; -1 in an id column means NULL.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) { sqlite3_reset(s_); }
  Binder& i(int64_t v) { sqlite3_bind_int64(s_, ++n_, v); return *this; }
  Binder& id(int64_t v) { if (v < 0) sqlite3_bind_null(s_, ++n_); else sqlite3_bind_int64(s_, ++n_, v); return *this; }
  Binder& u(uint64_t v) { sqlite3_bind_int64(s_, ++n_, static_cast<int64_t>(v)); return *this; }
  Binder& d(double v) { sqlite3_bind_double(s_, ++n_, v); return *this; }
  Binder& t(const std::string& v) { sqlite3_bind_text(s_, ++n_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); return *this; }
  Binder& t(const char* v) { sqlite3_bind_text(s_, ++n_, v, -1, SQLITE_STATIC); return *this; }
  Binder& null() { sqlite3_bind_null(s_, ++n_); return *this; }
  bool step() { return sqlite3_step(s_) == SQLITE_DONE; }

 private:
  sqlite3_stmt* s_;
  int n_ = 0;
};

bool mergeable_completion(const OpRecord& op, const CompletionRecord& c) {
  // Everything the completion view gives back must be recoverable from the merged row.
  return c.op_id == static_cast<int64_t>(op.op_id) && static_cast<int64_t>(c.completion_id) == op.completion_id &&
         op.dur_ns >= 0 && c.ts_ns == op.ts_ns + op.dur_ns && c.qp_id == op.qp_id && c.wr_id == op.wr_id &&
         static_cast<int64_t>(c.status) == op.status && (c.flow_id == 0 || c.flow_id == op.flow_id) &&
         (c.thread_id == op.thread_id || c.thread_id >= 0);
}

class SqlFileSink : public FileSink {
 public:
  explicit SqlFileSink(SqliteExport* db) : db_(db) {}
  ~SqlFileSink() override { flush(); }
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
    completions_.push_back(r);
    if (completions_.size() >= kBatchRows) flush();
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
  void gpu_op(const OpRecord& op, const GpuWqeRecord& w) override {
    gpu_ops_.emplace_back(op.op_id, w);
    this->op(op);
  }
  void finish() override {
    release_held();
    flush();
  }

 private:
  void push_op(const OpRecord& r, const CompletionRecord* c) {
    ops_.push_back({r, c != nullptr, c ? *c : CompletionRecord{}});
    if (ops_.size() >= kBatchRows) flush();
  }
  void release_held() {
    if (holding_) holding_ = false, push_op(held_, nullptr);
  }
  void flush() {
    if (ops_.empty() && completions_.empty() && errors_.empty() && doorbells_.empty() && launches_.empty() && gpu_ops_.empty()) return;
    std::lock_guard<std::mutex> g(db_->lock());
    db_->insert_ops(ops_);
    db_->insert_gpu_ops(gpu_ops_);
    db_->insert_completions(completions_);
    db_->insert_errors(errors_);
    db_->insert_doorbells(doorbells_);
    db_->insert_launches(launches_);
    ops_.clear(), completions_.clear(), errors_.clear(), doorbells_.clear(), launches_.clear(), gpu_ops_.clear();
  }
  SqliteExport* db_;
  OpRecord held_;
  bool holding_ = false;
  std::vector<SqliteExport::OpRow> ops_;
  std::vector<CompletionRecord> completions_;
  std::vector<ErrorRecord> errors_;
  std::vector<DoorbellRecord> doorbells_;
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

}  // namespace

SqliteExport::~SqliteExport() {
  for (sqlite3_stmt* s : {op_, completion_, error_, doorbell_, launch_, gpu_op_})
    if (s) sqlite3_finalize(s);
  if (db_) sqlite3_close(db_);
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
  // No mutex in SQLite: every use is under mu_ (or before the pass).
  if (sqlite3_open_v2(tmp_path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    *error = "cannot create " + tmp_path_ + ": " + sqlite3_errmsg(db_);
    return false;
  }
  // The file is rebuilt from the traces on failure: no journal, no syncing, nobody else opens it
  // while it is written; a large page cache, so that the B-trees' inner pages are not re-read.
  if (!exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=65536; PRAGMA locking_mode=EXCLUSIVE; "
            "PRAGMA cache_size=-262144; PRAGMA temp_store=MEMORY;", error) ||
      !exec(kSqliteSchema, error) || !exec(sqlite_views(m.start_ns).c_str(), error) || !exec("BEGIN", error))
    return false;
  auto prepare = [&](const char* sql, sqlite3_stmt** s) {
    if (sqlite3_prepare_v2(db_, sql, -1, s, nullptr) == SQLITE_OK) return true;
    *error = std::string("sqlite: ") + sqlite3_errmsg(db_);
    return false;
  };
  if (!prepare("INSERT INTO op_row VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &op_) ||
      !prepare("INSERT INTO completion_row VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &completion_) ||
      !prepare("INSERT INTO error VALUES(?,?,?,?,?,?,?,?,?,?)", &error_) ||
      !prepare("INSERT INTO doorbell VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)", &doorbell_) ||
      !prepare("INSERT INTO gpu_op VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &gpu_op_) ||
      !prepare("INSERT INTO kernel_launch VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &launch_))
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
  Binder(s).t("schema_version").t("2").step();
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

std::unique_ptr<FileSink> SqliteExport::open_file(uint32_t) { return std::make_unique<SqlFileSink>(this); }

int64_t SqliteExport::cq_id(uint32_t process_id, uint64_t handle) {
  return cq_ids_.try_emplace({process_id, handle}, static_cast<int64_t>(cq_ids_.size())).first->second;
}

void SqliteExport::insert_ops(const std::vector<OpRow>& rows) {
  for (const auto& [r, merged, c] : rows) {
    Binder b(op_);
    b.u(r.op_id).i(r.ts_ns - start_ns_);
    if (r.dur_ns >= 0) b.i(r.dur_ns); else b.null();
    b.id(r.thread_id).i(layer_index(r.layer)).id(r.qp_id).i(r.op_class).u(r.bytes).id(r.peer_process_id);
    if (r.status != -1 || r.is_call) b.i(r.status); else b.null();
    b.u(r.wr_id).i(r.wr_count);
    if (r.flow_id) b.u(r.flow_id); else b.null();
    b.i(r.is_call);
    if (merged) {
      if (c.status == 0) wc_opcodes_.insert(c.opcode);
      wc_statuses_.insert(c.status);
      b.i(static_cast<int64_t>(c.completion_id - r.op_id));
      if (c.thread_id == r.thread_id) b.null(); else b.i(c.thread_id);
      b.i(cq_id(c.process_id, c.cq)).u(c.opcode).u(c.byte_len).u(c.imm_data).u(c.src_qp).u(c.vendor_err).i(c.flow_id != 0);
    } else {
      b.null().null().null().null().null().null().null().null().null();
    }
    b.step();
  }
}

void SqliteExport::insert_completions(const std::vector<CompletionRecord>& rows) {
  for (const CompletionRecord& r : rows) {
    if (r.status == 0) wc_opcodes_.insert(r.opcode);
    wc_statuses_.insert(r.status);
    Binder b(completion_);
    b.u(r.completion_id).i(r.ts_ns - start_ns_).id(r.thread_id).id(r.qp_id).i(cq_id(r.process_id, r.cq)).u(r.wr_id).u(r.opcode).u(r.status)
        .u(r.byte_len).u(r.imm_data).u(r.src_qp).u(r.vendor_err).id(r.op_id);
    if (r.flow_id) b.u(r.flow_id); else b.null();
    b.step();
  }
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
    b.step();
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
        .i(r.result).step();
  }
}

bool SqliteExport::finish(const ExperimentModel& m, const Aggregates& agg, std::string* error) {
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db_, "INSERT INTO cq VALUES(?,?,?)", -1, &s, nullptr);
  for (const auto& [key, id] : cq_ids_) Binder(s).i(id).i(key.first).u(key.second).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO wc_opcode_name VALUES(?,?)", -1, &s, nullptr);
  for (uint64_t c : wc_opcodes_) Binder(s).u(c).t(wc_opcode_name(c)).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO wc_status_name VALUES(?,?)", -1, &s, nullptr);
  for (uint64_t c : wc_statuses_) Binder(s).u(c).t(wc_status_name(c)).step();
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO gpu VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const GpuRow& g : agg.gpus) {
    const DoorbellCounters& d = g.doorbells;
    Binder(s).i(g.process_id).id(g.gpu).u(g.qps).u(d.doorbells).u(d.wqebbs).i(d.first_ns).i(d.last_ns).u(g.ops.total_ops())
        .u(g.ops.bytes_out()).u(g.ops.bytes_read()).u(d.recovered).u(d.lost_wqebbs).u(d.damaged).u(d.unread_wqebbs).step();
  }
  sqlite3_finalize(s);
  sqlite3_prepare_v2(db_, "INSERT INTO qp_doorbells VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const QpRow& q : m.qps) {
    const DoorbellCounters& d = agg.qp_doorbells[q.qp_id];
    if (q.gpu_initiated || d.doorbells)
      Binder(s).i(q.qp_id).u(d.doorbells).u(d.wqebbs).u(d.blueflame).i(d.first_ns).i(d.last_ns).u(d.data_doorbells)
          .u(d.control_doorbells).i(d.wqes_read).u(d.recovered).u(d.recovered_wqebbs).u(d.lost_wqebbs).u(d.damaged)
          .u(d.unread_wqebbs).u(d.index_errors).u(d.batches).u(d.wait_ns).u(d.max_wait_ns).step();
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
  sqlite3_prepare_v2(db_, "INSERT INTO qp_stats VALUES(?,?,?,?)", -1, &s, nullptr);
  for (const QpRow& q : m.qps)
    for (unsigned i = 0; i < kOpClasses; ++i)
      if (agg.qp[q.qp_id].ops[i] || agg.qp[q.qp_id].bytes[i])
        Binder(s).i(q.qp_id).t(op_class_name(i)).u(agg.qp[q.qp_id].ops[i]).u(agg.qp[q.qp_id].bytes[i]).step();
  sqlite3_finalize(s);
  for (sqlite3_stmt** st : {&op_, &completion_, &error_, &doorbell_, &launch_, &gpu_op_}) {
    sqlite3_finalize(*st);
    *st = nullptr;
  }
  if (!exec(kSqliteIndexes, error) || !exec("COMMIT", error)) return false;
  sqlite3_close(db_);
  db_ = nullptr;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    *error = "cannot rename " + tmp_path_ + " to " + path_;
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter
