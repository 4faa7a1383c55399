// See otf2_export.h.
#include "export/otf2_export.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <tuple>
#include <vector>

#include "export/sqlite_api.h"

namespace sigmatrace::exporter {

namespace {

enum class Kind : uint8_t { enter, leave, put, get, atomic, rma_complete, isend, isend_complete, irecv_request, irecv };

struct Event {
  int64_t ts;
  uint64_t seq;  // order of events at one time: as they were made
  Kind kind;
  uint32_t ref = 0;  // region, window
  uint32_t peer = OTF2_UNDEFINED_UINT32;
  uint32_t tag = 0;
  uint64_t bytes = 0, id = 0;
  OTF2_RmaAtomicType atomic = OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ADD;
};

struct Location {
  std::string name;
  uint32_t group = 0;
  OTF2_LocationType type = OTF2_LOCATION_TYPE_CPU_THREAD;
  std::vector<Event> ops;      // sorted by time before writing
  std::vector<Event> regions;  // already in order (properly nested)
};

// One query's rows, handed to fn as a statement positioned on each row.
template <typename Fn>
bool each_row(sqlite3* db, const char* sql, std::string* error, Fn fn) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    *error = std::string("trace.sqlite: ") + sqlite3_errmsg(db);
    return false;
  }
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) fn(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) *error = std::string("trace.sqlite: ") + sqlite3_errmsg(db);
  return rc == SQLITE_DONE;
}
int64_t i64(sqlite3_stmt* s, int c) { return sqlite3_column_int64(s, c); }
bool null(sqlite3_stmt* s, int c) { return sqlite3_column_type(s, c) == SQLITE_NULL; }
std::string text(sqlite3_stmt* s, int c) {
  const unsigned char* t = sqlite3_column_text(s, c);
  return t ? reinterpret_cast<const char*>(t) : "";
}

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }
OTF2_FlushCallbacks kFlush = {pre_flush, post_flush};

class Otf2Writer {
 public:
  explicit Otf2Writer(sqlite3* db) : db_(db) {}
  bool load(std::string* error);
  bool write(const std::string& dir, Otf2Counts* counts, std::string* error);

 private:
  uint32_t string(const std::string& s) { return strings_.try_emplace(s, static_cast<uint32_t>(strings_.size())).first->second; }
  uint32_t region(const std::string& name, bool nccl) { return regions_.try_emplace(name, std::pair{static_cast<uint32_t>(regions_.size()), nccl}).first->second.first; }
  uint32_t window(int64_t qp, uint32_t process) {
    const int64_t key = qp >= 0 ? qp : -1 - static_cast<int64_t>(process);
    return windows_.try_emplace(key, static_cast<uint32_t>(windows_.size())).first->second;
  }
  Location& location(uint64_t id) { return locations_[id]; }
  void add_op(Location& loc, sqlite3_stmt* s);
  bool load_regions(std::string* error);

  sqlite3* db_;
  std::vector<std::pair<std::string, std::string>> processes_;  // (name, host)
  std::map<std::string, uint32_t> hosts_;
  std::map<uint64_t, Location> locations_;      // by location id
  std::map<uint32_t, uint64_t> first_location_;  // process -> its first thread: its rank's location
  std::map<std::string, uint32_t> strings_;
  std::map<std::string, std::pair<uint32_t, bool>> regions_;
  std::map<int64_t, uint32_t> windows_;          // qp_id (or -1 - process) -> window
  std::map<int64_t, int64_t> connection_of_qp_;
  uint64_t seq_ = 0, next_location_ = 0;
  int64_t first_ns_ = INT64_MAX, last_ns_ = 0;
  Otf2Counts counts_;
};

bool Otf2Writer::load(std::string* error) {
  if (!each_row(db_, "SELECT process_id, host, pid, rank FROM process ORDER BY process_id", error, [&](sqlite3_stmt* s) {
        const std::string host = text(s, 1);
        const std::string name = null(s, 3) ? host + ":" + std::to_string(i64(s, 2)) : "rank " + std::to_string(i64(s, 3)) + " (" + host + ":" + std::to_string(i64(s, 2)) + ")";
        processes_.emplace_back(name, host);
        hosts_.try_emplace(host, static_cast<uint32_t>(hosts_.size()));
      }))
    return false;
  if (!each_row(db_, "SELECT thread_id, process_id, tid, name FROM thread ORDER BY thread_id", error, [&](sqlite3_stmt* s) {
        const auto id = static_cast<uint64_t>(i64(s, 0));
        const auto process = static_cast<uint32_t>(i64(s, 1));
        Location& l = location(id);
        l.name = "thread " + std::to_string(i64(s, 2)) + (text(s, 3).empty() ? "" : " " + text(s, 3));
        l.group = process;
        first_location_.try_emplace(process, id);
        next_location_ = std::max(next_location_, id + 1);
      }))
    return false;
  if (!each_row(db_, "SELECT qp_id, connection_id FROM qp WHERE connection_id IS NOT NULL", error,
                [&](sqlite3_stmt* s) { connection_of_qp_[i64(s, 0)] = i64(s, 1); }))
    return false;
  // GPU-initiated operations go to a location of their GPU (the poller's thread only saw them).
  std::map<std::pair<uint32_t, int64_t>, uint64_t> gpu_locations;
  if (!each_row(db_,
                "SELECT o.op_id, o.ts_ns, o.dur_ns, o.process_id, o.thread_id, o.layer, o.qp_id, o.opcode, o.bytes, o.peer_process_id, "
                "g.gpu FROM op o LEFT JOIN gpu_op g USING (op_id) ORDER BY o.op_id",
                error, [&](sqlite3_stmt* s) {
                  const auto process = static_cast<uint32_t>(i64(s, 3));
                  const bool gpu_op = text(s, 5) == "gpu";
                  uint64_t loc;
                  if (gpu_op || null(s, 4)) {  // key -2: operations of no known thread
                    const int64_t gpu = !gpu_op ? -2 : null(s, 10) ? -1 : i64(s, 10);
                    auto [it, fresh] = gpu_locations.try_emplace({process, gpu}, 0);
                    if (fresh) {
                      it->second = (uint64_t{1} << 40) + gpu_locations.size();  // after every thread's id
                      Location& l = location(it->second);
                      l.name = gpu >= 0 ? "GPU " + std::to_string(gpu) : gpu == -1 ? "GPU-initiated (queues in host memory)" : "operations";
                      l.group = process;
                      if (gpu_op) l.type = OTF2_LOCATION_TYPE_ACCELERATOR_STREAM;
                    }
                    loc = it->second;
                  } else {
                    loc = static_cast<uint64_t>(i64(s, 4));
                  }
                  add_op(location(loc), s);
                }))
    return false;
  return load_regions(error);
}

void Otf2Writer::add_op(Location& loc, sqlite3_stmt* s) {
  // op_id ts_ns dur_ns process_id thread_id layer qp_id opcode bytes peer_process_id
  const auto process = static_cast<uint32_t>(i64(s, 3));
  const int64_t ts = i64(s, 1), qp = null(s, 6) ? -1 : i64(s, 6);
  const bool done = !null(s, 2);
  const int64_t end = ts + (done ? i64(s, 2) : 0);
  const std::string op = text(s, 7);
  Event e{ts, seq_++, Kind::put};
  e.id = static_cast<uint64_t>(i64(s, 0)), e.bytes = static_cast<uint64_t>(i64(s, 8));
  e.peer = null(s, 9) ? OTF2_UNDEFINED_UINT32 : static_cast<uint32_t>(i64(s, 9));
  e.ref = window(qp, process);
  auto it = connection_of_qp_.find(qp);
  e.tag = it == connection_of_qp_.end() ? 0 : static_cast<uint32_t>(it->second + 1);
  first_ns_ = std::min(first_ns_, ts), last_ns_ = std::max(last_ns_, end);
  if (op == "RECV") {
    e.kind = Kind::irecv_request, ++counts_.receive_requests;
    loc.ops.push_back(e);
    if (done) {
      Event r = e;
      r.ts = end, r.seq = seq_++, r.kind = Kind::irecv, ++counts_.receives;
      loc.ops.push_back(r);
    }
    return;
  }
  const bool message = op == "SEND" || op == "SEND_IMM" || op == "WRITE_IMM" || op == "SEND_INV";
  if (message) e.kind = Kind::isend, ++counts_.sends;
  else if (op == "READ") e.kind = Kind::get, ++counts_.gets;
  else if (op == "ATOMIC_CS" || op == "ATOMIC_FA") {
    e.kind = Kind::atomic, ++counts_.atomics;
    e.atomic = op == "ATOMIC_CS" ? OTF2_RMA_ATOMIC_TYPE_COMPARE_AND_SWAP : OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ADD;
  } else {
    e.kind = Kind::put, ++counts_.puts;  // writes, and what writes data at the peer by another name
  }
  loc.ops.push_back(e);
  if (!done) return;  // Simple mode's calls, and work requests whose completion was not traced
  Event c = e;
  c.ts = end, c.seq = seq_++;
  c.kind = message ? Kind::isend_complete : Kind::rma_complete;
  ++(message ? counts_.send_completions : counts_.rma_completions);
  loc.ops.push_back(c);
}

bool Otf2Writer::load_regions(std::string* error) {
  // NVTX push/pop ranges, nested on their thread: entered in begin order, each left before the
  // next one that begins after its end.
  std::map<int64_t, std::vector<std::pair<int64_t, uint32_t>>> open;  // thread -> stack of (end, region)
  auto close_until = [&](Location& l, std::vector<std::pair<int64_t, uint32_t>>& stack, int64_t t) {
    while (!stack.empty() && stack.back().first <= t) {
      l.regions.push_back({stack.back().first, seq_++, Kind::leave, stack.back().second});
      stack.pop_back();
    }
  };
  if (!each_row(db_,
                "SELECT thread_id, start_ns, end_ns, COALESCE(domain || ' / ', '') || name FROM range "
                "WHERE kind = 'push' AND thread_id IS NOT NULL ORDER BY thread_id, start_ns, depth",
                error, [&](sqlite3_stmt* s) {
                  const int64_t thread = i64(s, 0), start = i64(s, 1), end = std::max(start, i64(s, 2));
                  Location& l = location(static_cast<uint64_t>(thread));
                  auto& stack = open[thread];
                  close_until(l, stack, start - 1);
                  const uint32_t r = region(text(s, 3), false);
                  l.regions.push_back({start, seq_++, Kind::enter, r});
                  stack.emplace_back(end, r);
                  ++counts_.range_regions;
                  first_ns_ = std::min(first_ns_, start), last_ns_ = std::max(last_ns_, end);
                }))
    return false;
  for (auto& [thread, stack] : open) close_until(location(static_cast<uint64_t>(thread)), stack, INT64_MAX);
  // NCCL's calls over their network part, each process's on lanes (a lane holds calls that do
  // not overlap), named as the call's function and size.
  std::map<uint32_t, std::vector<std::pair<int64_t, uint64_t>>> lanes;  // process -> (free from, location)
  return each_row(db_,
                  "SELECT process_id, substr(label, 1, instr(label, ' #') - 1), bytes, net_start_ns, net_end_ns FROM nccl_task "
                  "WHERE net_start_ns IS NOT NULL "
                  "ORDER BY process_id, net_start_ns, task_id",
                  error, [&](sqlite3_stmt* s) {
                    const auto process = static_cast<uint32_t>(i64(s, 0));
                    const int64_t start = i64(s, 3), end = std::max(start, i64(s, 4));
                    auto& mine = lanes[process];
                    auto lane = std::find_if(mine.begin(), mine.end(), [&](const auto& l) { return l.first <= start; });
                    if (lane == mine.end()) {
                      const uint64_t id = (uint64_t{2} << 40) + (uint64_t{process} << 16) + mine.size();
                      Location& l = location(id);
                      l.name = "NCCL calls" + (mine.empty() ? std::string() : " " + std::to_string(mine.size()));
                      l.group = process;
                      mine.emplace_back(start, id);
                      lane = mine.end() - 1;
                    }
                    const uint32_t r = region(text(s, 1) + " " + std::to_string(i64(s, 2)) + " B", true);  // the call's name, as labelled
                    Location& l = location(lane->second);
                    l.regions.push_back({start, seq_++, Kind::enter, r});
                    l.regions.push_back({end, seq_++, Kind::leave, r});
                    lane->first = end + 1;
                    ++counts_.nccl_regions;
                    first_ns_ = std::min(first_ns_, start), last_ns_ = std::max(last_ns_, end);
                  });
}

// Times are the analysis' (ns on its corrected clock); the clock properties say where they begin.
void write_event(OTF2_EvtWriter* w, const Event& e, OTF2_CommRef comm) {
  const auto t = static_cast<OTF2_TimeStamp>(e.ts);
  switch (e.kind) {
    case Kind::enter: OTF2_EvtWriter_Enter(w, nullptr, t, e.ref); break;
    case Kind::leave: OTF2_EvtWriter_Leave(w, nullptr, t, e.ref); break;
    case Kind::put: OTF2_EvtWriter_RmaPut(w, nullptr, t, e.ref, e.peer, e.bytes, e.id); break;
    case Kind::get: OTF2_EvtWriter_RmaGet(w, nullptr, t, e.ref, e.peer, e.bytes, e.id); break;
    case Kind::atomic: OTF2_EvtWriter_RmaAtomic(w, nullptr, t, e.ref, e.peer, e.atomic, e.bytes, e.bytes, e.id); break;
    case Kind::rma_complete: OTF2_EvtWriter_RmaOpCompleteNonBlocking(w, nullptr, t, e.ref, e.id); break;
    case Kind::isend: OTF2_EvtWriter_MpiIsend(w, nullptr, t, e.peer, comm, e.tag, e.bytes, e.id); break;
    case Kind::isend_complete: OTF2_EvtWriter_MpiIsendComplete(w, nullptr, t, e.id); break;
    case Kind::irecv_request: OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, t, e.id); break;
    case Kind::irecv: OTF2_EvtWriter_MpiIrecv(w, nullptr, t, e.peer, comm, e.tag, e.bytes, e.id); break;
  }
}

bool Otf2Writer::write(const std::string& dir, Otf2Counts* counts, std::string* error) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  OTF2_Archive* archive = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                            OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive) {
    *error = "otf2: cannot create an archive in " + dir;
    return false;
  }
  OTF2_Archive_SetFlushCallbacks(archive, &kFlush, nullptr);
  OTF2_Archive_SetSerialCollectiveCallbacks(archive);
  OTF2_Archive_OpenEvtFiles(archive);
  if (first_ns_ == INT64_MAX) first_ns_ = last_ns_ = 0;
  const auto offset = static_cast<uint64_t>(first_ns_);
  constexpr OTF2_CommRef kComm = 0;
  std::map<uint64_t, uint64_t> events;
  for (auto& [id, l] : locations_) {
    std::stable_sort(l.ops.begin(), l.ops.end(), [](const Event& a, const Event& b) { return a.ts < b.ts || (a.ts == b.ts && a.seq < b.seq); });
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, id);
    // The operations and the regions, each in order already: merged by time.
    size_t i = 0, j = 0;
    while (i < l.ops.size() || j < l.regions.size()) {
      const bool region = j < l.regions.size() && (i == l.ops.size() || l.regions[j].ts <= l.ops[i].ts);
      write_event(w, region ? l.regions[j++] : l.ops[i++], kComm);
    }
    events[id] = l.ops.size() + l.regions.size();
    OTF2_Archive_CloseEvtWriter(archive, w);
  }
  OTF2_Archive_CloseEvtFiles(archive);
  OTF2_Archive_OpenDefFiles(archive);
  for (const auto& [id, l] : locations_) OTF2_Archive_CloseDefWriter(archive, OTF2_Archive_GetDefWriter(archive, id));
  OTF2_Archive_CloseDefFiles(archive);

  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, offset, static_cast<uint64_t>(last_ns_ - first_ns_) + 1, OTF2_UNDEFINED_TIMESTAMP);
  // Strings first need every name: gathered, then written in id order.
  const uint32_t s_machine = string("machine"), s_node = string("node");
  std::vector<uint32_t> host_names;
  for (const auto& [host, id] : hosts_) host_names.push_back(string(host));
  std::vector<uint32_t> process_names, location_names;
  for (const auto& [name, host] : processes_) process_names.push_back(string(name));
  for (const auto& [id, l] : locations_) location_names.push_back(string(l.name));
  std::vector<std::tuple<uint32_t, uint32_t, bool>> regions;  // (region, name, NCCL's), in the regions' order
  for (const auto& [name, r] : regions_) regions.emplace_back(r.first, string(name), r.second);
  std::sort(regions.begin(), regions.end());
  std::vector<std::pair<uint32_t, uint32_t>> windows;  // (window, name), in the windows' order (readers expect it)
  for (const auto& [key, w] : windows_) windows.emplace_back(w, string(key >= 0 ? "qp " + std::to_string(key) : "no QP"));
  std::sort(windows.begin(), windows.end());
  const uint32_t s_comm = string("processes"), s_locations = string("ranks' locations"), s_gpus = string("GPUs");
  std::vector<std::pair<uint32_t, std::string>> by_id;
  for (const auto& [s, id] : strings_) by_id.emplace_back(id, s);
  std::sort(by_id.begin(), by_id.end());
  for (const auto& [id, s] : by_id) OTF2_GlobalDefWriter_WriteString(g, id, s.c_str());

  OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s_machine, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  size_t h = 0;
  for (const auto& [host, id] : hosts_) OTF2_GlobalDefWriter_WriteSystemTreeNode(g, id + 1, host_names[h++], s_node, 0);
  const auto processes = static_cast<uint32_t>(processes_.size());
  bool any_gpu = false;
  for (const auto& [id, l] : locations_) any_gpu |= l.type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM;
  for (uint32_t p = 0; p < processes; ++p) {
    OTF2_GlobalDefWriter_WriteLocationGroup(g, p, process_names[p], OTF2_LOCATION_GROUP_TYPE_PROCESS, hosts_[processes_[p].second] + 1,
                                            OTF2_UNDEFINED_LOCATION_GROUP);
    if (any_gpu)  // GPU locations sit in an accelerator group the process created
      OTF2_GlobalDefWriter_WriteLocationGroup(g, processes + p, s_gpus, OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, hosts_[processes_[p].second] + 1, p);
  }
  size_t k = 0;
  for (const auto& [id, l] : locations_) {
    const uint32_t group = l.type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM ? processes + l.group : l.group;
    OTF2_GlobalDefWriter_WriteLocation(g, id, location_names[k++], l.type, events[id], group);
  }
  for (const auto& [region, name, nccl] : regions)  // NCCL's calls are collectives; NVTX ranges, code
    OTF2_GlobalDefWriter_WriteRegion(g, region, name, name, OTF2_UNDEFINED_STRING, nccl ? OTF2_REGION_ROLE_COLL_ALL2ALL : OTF2_REGION_ROLE_CODE,
                                     OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, OTF2_UNDEFINED_STRING, 0, 0);
  // The communicator: every process a rank, its first thread its location.
  std::vector<uint64_t> members, ranks;
  for (uint32_t p = 0; p < processes; ++p) {
    auto it = first_location_.find(p);
    members.push_back(it != first_location_.end() ? it->second : OTF2_UNDEFINED_LOCATION);
    ranks.push_back(p);
  }
  OTF2_GlobalDefWriter_WriteGroup(g, 0, s_locations, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, processes, members.data());
  OTF2_GlobalDefWriter_WriteGroup(g, 1, s_comm, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, processes, ranks.data());
  OTF2_GlobalDefWriter_WriteComm(g, kComm, s_comm, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
  for (const auto& [w, name] : windows) OTF2_GlobalDefWriter_WriteRmaWin(g, w, name, kComm, OTF2_RMA_WIN_FLAG_NONE);
  const OTF2_ErrorCode closed = OTF2_Archive_Close(archive);
  if (closed != OTF2_SUCCESS) {
    *error = std::string("otf2: ") + OTF2_Error_GetDescription(closed);
    return false;
  }
  counts_.locations = locations_.size();
  *counts = counts_;
  return true;
}

}  // namespace

bool write_otf2(const std::string& experiment_dir, Otf2Counts* counts, std::string* error) {
  const std::string db_path = experiment_dir + "/trace.sqlite";
  if (!std::filesystem::exists(db_path)) {
    *error = "otf2: " + db_path + " is missing (analyze writes it; not with --no-sqlite)";
    return false;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    *error = "otf2: cannot open " + db_path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return false;
  }
  Otf2Writer w(db);
  const bool ok = w.load(error) && w.write(experiment_dir + "/otf2", counts, error);
  sqlite3_close(db);
  return ok;
}

}  // namespace sigmatrace::exporter
