// See sqlite_call_rows.h. (The NVTX ranges' rows, written by each file's sink, are here too.)
#include "export/sqlite_call_rows.h"

#include "export/sqlite_binder.h"
#include "export/sqlite_writer.h"

namespace sigmatrace::exporter {

using namespace sigmatrace::analysis;

void SqliteExport::insert_ranges(const std::vector<RangeRow>& rows) {
  static constexpr const char* kKinds[] = {"", "push", "start", "mark"};
  for (const RangeRow& r : rows) {
    Binder b(range_);
    b.u(r.range_id).i(r.process_id).id(r.thread_id).t(kKinds[r.kind < 4 ? r.kind : 0]);
    if (r.domain.empty()) b.null(); else b.t(r.domain);
    b.t(r.name).t(r.path).u(r.category);
    if (r.category_name.empty()) b.null(); else b.t(r.category_name);
    if (r.color) b.u(r.color); else b.null();
    if (r.payload.empty()) b.null(); else b.t(r.payload);
    b.i(r.start_ns).i(r.end_ns).i(r.end_ns - r.start_ns).i(r.ended).u(r.depth);
    if (r.parent >= 0) b.u((uint64_t{r.process_id} << 40) | static_cast<uint64_t>(r.parent)); else b.null();
    b.step();
  }
}

void insert_nccl_tasks(sqlite3* db, const ExperimentModel& m, const Aggregates& agg) {
  static constexpr const char* kKinds[] = {"", "collective", "send", "recv"};
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO nccl_task VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &s, nullptr);
  for (const ProcessRow& p : m.processes) {
    const std::vector<NcclTaskTraffic>& traffic = agg.process[p.process_id].nccl_traffic;
    for (size_t i = 0; i < p.nccl_tasks.size(); ++i) {
      const NcclTaskRow& t = p.nccl_tasks[i];
      const NcclTaskTraffic n = i < traffic.size() ? traffic[i] : NcclTaskTraffic{};
      Binder b(s);
      b.u(t.task_id).i(t.process_id).id(t.thread_id).i(t.ts_ns).t(t.label()).t(kKinds[t.kind < 4 ? t.kind : 0]).t(t.func).u(t.seq)
          .u(t.comm_hash);
      if (t.comm_name.empty()) b.null(); else b.t(t.comm_name);
      b.i(t.rank).i(t.nranks).u(t.count).t(t.datatype).u(t.bytes()).i(t.peer);
      if (t.algorithm.empty()) b.null(), b.null(); else b.t(t.algorithm).t(t.protocol);
      b.u(t.channels).id(p.ranges.id(t.range)).u(n.wrs).u(n.send_wrs).u(n.recv_wrs).u(n.wire_bytes).id(t.algorithm_bytes());
      if (n.first_post_ns < 0) b.null().null().null();
      else b.i(n.first_post_ns).i(n.last_done_ns).i(n.last_done_ns - n.first_post_ns);
      b.step();
    }
  }
  sqlite3_finalize(s);
}

}  // namespace sigmatrace::exporter
