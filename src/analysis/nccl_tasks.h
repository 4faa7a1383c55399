// NCCL's tasks (one per collective or point-to-point call, from the nccl provider, NCCL's profiler
// plugin) and which of them each verbs operation of NCCL's IB transport serves.
//
// NCCL's proxy thread posts a collective's work requests after the call returned, so the NVTX
// range open on the posting thread says nothing of which call they belong to. NCCL itself says it:
// just before its IB transport posts a work request for a proxy step, the plugin records the task
// of that step with the QP and wr_id of the request (nccl_net_wr). A work request is then the
// task's when the latest nccl_net_wr of its thread names its QP and wr_id (exact: NCCL's own
// bookkeeping); a work request NCCL announced without its own wr_id (the last of a chained post,
// a receive's clear-to-send write) takes the latest one of its thread on its QP; work NCCL posts
// for no step (the flush reads of GPUDirect RDMA) is not attributed, and counted.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/chunk_codec.h"

namespace sigmatrace::analysis {

struct NcclTaskRow {
  uint64_t task_id = 0;        // process_id << 40 | n, in order of launch
  uint64_t plugin_task = 0;    // the number the profiler gave it in the process
  uint32_t process_id = 0;
  uint32_t tid = 0;            // the launching thread
  int64_t thread_id = -1;
  uint64_t tsc = 0;
  int64_t ts_ns = 0;           // when NCCL launched it (inside the call, or its group's end)
  uint64_t comm_hash = 0;
  std::string comm_name;
  int64_t rank = -1, nranks = 0;
  uint64_t kind = 0;           // format::NcclTaskKind
  uint64_t seq = 0, count = 0, channels = 0, warps = 0;
  int64_t peer = -1;           // root (collectives) or peer (send, recv)
  std::string func, datatype, algorithm, protocol;
  int64_t range = -1;          // the NVTX range (index in the process's ranges) open on its thread then
  // "ncclAllReduce", "ncclSend", "ncclRecv": the call's NCCL name.
  std::string call_name() const;
  // "ncclAllReduce #37": the call's name and its number among that function's calls on the
  // communicator (NCCL's sequence number).
  std::string label() const { return call_name() + " #" + std::to_string(seq); }
  uint64_t bytes() const;            // count x the datatype's size (0: unknown datatype)
  // What the algorithm itself must send from this rank (ring all-reduce: 2(n-1)/n of the buffer;
  // all-gather, reduce-scatter: (n-1) x the per-rank part; send: the message); -1: not defined
  // here (broadcast, reduce, receive).
  int64_t algorithm_bytes() const;
};

// Per task: the verbs operations attributed to it and the span of its network part.
struct NcclTaskTraffic {
  uint64_t wrs = 0, send_wrs = 0, recv_wrs = 0, wire_bytes = 0;  // wire_bytes: what its sends carried
  int64_t first_post_ns = -1, last_done_ns = -1;                 // first post, last completion (or post)
};

// How operations found their task (or did not), per process.
struct NcclAttribution {
  uint64_t by_wr_id = 0, by_qp = 0, unattributed = 0;
  uint64_t unknown_steps = 0;  // nccl_net_wr whose step NCCL did not tie to a task
};

// First pass: one file's nccl_comm and nccl_task events, in file order.
class NcclTaskCollector {
 public:
  void on_event(uint32_t tid, const format::DecodedEvent& ev);
  bool empty() const { return tasks_.empty(); }
  std::vector<NcclTaskRow> finish() { return std::move(tasks_); }

 private:
  struct Comm {
    uint64_t hash = 0;
    int64_t rank = -1, nranks = 0;
    std::string name;
  };
  std::unordered_map<uint64_t, Comm> comms_;  // plugin context -> communicator
  std::vector<NcclTaskRow> tasks_;
};

// Second pass: ties one file's verbs operations to its tasks (see the top of this file).
class NcclWorkRequestMatcher {
 public:
  // plugin task -> index in the process's tasks
  explicit NcclWorkRequestMatcher(const std::unordered_map<uint64_t, uint32_t>* task_index) : index_(task_index) {}
  bool active() const { return index_ && !index_->empty(); }
  void on_net_wr(int64_t thread, const format::DecodedEvent& ev, NcclAttribution* counts);
  // The task index of a work request (wr_id known) or post call (wr_id_known false); -1: none.
  // Counts the operation's wr_count work requests as matched by wr_id, by QP or not at all.
  int64_t task_of(int64_t thread, uint64_t qp_num, uint64_t wr_id, bool wr_id_known, uint64_t wr_count, NcclAttribution* counts) const;

 private:
  struct Key {
    int64_t thread;
    uint64_t qp_num, wr_id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return (k.qp_num * 0x9e3779b97f4a7c15ull) ^ (k.wr_id << 20) ^ static_cast<uint64_t>(k.thread); }
  };
  const std::unordered_map<uint64_t, uint32_t>* index_;
  std::unordered_map<Key, uint32_t, KeyHash> by_wr_;   // (thread, qp, wr_id) -> task index
  std::unordered_map<Key, uint32_t, KeyHash> by_qp_;   // (thread, qp, 0) -> task index
};

}  // namespace sigmatrace::analysis
