// Aggregates of an experiment: operations and bytes per QP (by operation class), rolled up per
// process (rank), device and host, and the rank x rank and host x host communication matrices.
// The second pass fills the per-QP and per-process counters (each file owns its QPs' slots, so
// workers never share a counter); everything else is derived at the end from them and the topology.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/experiment_model.h"
#include "analysis/range_tagging.h"
#include "analysis/series.h"
#include "analysis/ibv_names.h"

namespace sigmatrace::analysis {

struct OpCounters {
  std::array<uint64_t, kOpClasses> ops{};    // work requests (Simple mode: wr_count of each call)
  std::array<uint64_t, kOpClasses> bytes{};  // RECV: bytes received (Full) or posted (Simple)
  uint64_t calls = 0;                        // post calls (Simple) or WRs (Full)
  uint64_t completions = 0, completion_errors = 0;
  // First and last timestamped post or completion (0: none, e.g. aggregate mode): the active span
  // over which a QP's bandwidth is reported.
  int64_t first_ns = 0, last_ns = 0;
  void saw(int64_t ts) {
    if (!first_ns || ts < first_ns) first_ns = ts;
    if (ts > last_ns) last_ns = ts;
  }
  void add(const OpCounters& o);
  uint64_t total_ops() const;
  uint64_t ops_out() const;    // operations that moved bytes to the peer (writes, sends, atomics)
  uint64_t bytes_out() const;  // bytes this side made travel to its peer (writes, sends, atomics)
  uint64_t bytes_read() const { return bytes[kOpRead]; }  // bytes this side pulled from its peer
};

// GPU-initiated traffic of one QP: the doorbells its GPU rang and the WQEBBs they announced (the
// sum of the producer-index deltas: doorbells a poller saw merged still count every WQEBB).
struct DoorbellCounters {
  uint64_t doorbells = 0, wqebbs = 0, blueflame = 0;
  uint64_t from_record = 0;  // lost to another QP's store on a shared register, forwarded from the record
  uint64_t data_doorbells = 0, control_doorbells = 0;  // with WQE recovery
  uint64_t not_read_doorbells = 0;  // doorbells whose WQEs were not read (all of them without recovery)
  // WQE recovery of the QP (its gpu_wqe_stats): WQEs recovered and the WQEBBs they took, slots
  // overwritten before they were read, WQEs that did not parse, WQEBBs not readable, producer
  // indices that went backwards; the batches and the time doorbells waited for them.
  uint64_t recovered = 0, recovered_wqebbs = 0, lost_wqebbs = 0, damaged = 0, unread_wqebbs = 0, index_errors = 0;
  uint64_t batches = 0, wait_ns = 0, max_wait_ns = 0;
  bool wqes_read = false;  // a gpu_wqe_stats said so (WQE recovery was on for this QP)
  uint64_t unrecovered() const { return lost_wqebbs + damaged + unread_wqebbs; }
  int64_t first_ns = 0, last_ns = 0;
  // For a hang (docs/hangs.md): the last doorbell at or before its process's first hang dump, and
  // at or before its peer's (0: none, or no dump); up to its own dump, the WQEBBs announced and the
  // last producer index (the QP's state at the dump: a GPU QP's posted work).
  int64_t last_before_own_dump_ns = 0, last_before_peer_dump_ns = 0;
  uint64_t wqebbs_before_own_dump = 0, producer_index_at_own_dump = 0;
  void saw(int64_t ts) {
    if (!first_ns || ts < first_ns) first_ns = ts;
    if (ts > last_ns) last_ns = ts;
  }
  void add(const DoorbellCounters& o);
};

// A QP's work that never completed in the trace (Full mode): what a hung process waits for. The
// sends counted are the signalled ones (an unsignalled send has no completion of its own); the
// oldest of each kind, and how many messages the QP sent and received in all (its peer's
// receives must match its sends, one for one).
struct PendingOp {
  int64_t ts_ns = 0;
  unsigned op_class = 0;
  uint64_t bytes = 0, wr_id = 0;
};
struct QpOutstanding {
  uint64_t sends = 0, receives = 0;  // work requests with no completion
  PendingOp oldest_send, oldest_receive;
  uint64_t messages_sent = 0, messages_received = 0;  // sends that consume a receive; receives completed
  bool any() const { return sends || receives; }
};

// What the doorbell hijack of one process did (from its gpu_uar_map and gpu_poller records).
struct HijackCounters {
  uint64_t pages_hijacked = 0, pages_not_hijacked = 0, pages_doorbells_off = 0, map_failures = 0;
  uint64_t pollers = 0, poller_doorbells = 0, poller_cpu_ns = 0, poller_wall_ns = 0;
  uint64_t launches = 0;
  // Kernel-end markers (cuda_kernel_markers): launches marked, ends reported, lost, unresolved.
  uint64_t kernels_marked = 0, kernel_ends = 0, kernel_markers_dropped = 0, kernel_markers_unresolved = 0;
};

// Traffic that left a process through UCX or libfabric, per (peer, layer, transport): found by the
// second pass over the process's file (layer_ops.h).
struct LayerTraffic {
  std::string layer;      // "ucx" or "ofi"
  std::string transport;  // "tcp/lo", "posix/memory", "tcp;ofi_rxm", "shm", ... ("" when unknown)
  uint32_t src = 0;       // process ids
  int64_t dst = -1;       // -1: peer not traced or not identified
  uint64_t ops = 0, bytes = 0;
};

struct ProcessCounters {
  OpCounters ops;              // summed over the process's QPs, plus operations without a QP (SRQ)
  uint64_t events = 0;         // decoded in the second pass
  uint64_t errors = 0;         // call errors, failed completions, async events
  // The same errors by what they were ("call reg_mr: EOPNOTSUPP", "completion REM_ACCESS_ERR"):
  // expected probes (NCCL's DMA-BUF check) are told apart from real failures at a glance.
  std::map<std::string, uint64_t> error_kinds;
  uint64_t unknown_qp = 0;     // data-path events naming a QP number never created in the trace
  uint64_t unmatched_completions = 0;
  uint64_t flows_out = 0, flows_in = 0;
  // UCX/libfabric receives matched to a send whose completion time is not in the trace (a
  // request completed through its callback, libfabric outside Full mode): the timeline draws no
  // arrow for them, since their post time may precede the send.
  uint64_t receives_untimed = 0;
  uint64_t aggregate_entries = 0;  // aggregate-mode records folded in
  DoorbellCounters doorbells_without_qp;  // doorbells naming a QP number no devx CREATE_QP created
  HijackCounters hijack;
  std::vector<LayerTraffic> layer_traffic;  // its UCX/libfabric traffic (reads: from their source)
  std::vector<RangeTraffic> range_traffic;  // per NVTX range of the process (ProcessRow::ranges)
  std::vector<NcclTaskTraffic> nccl_traffic;  // per NCCL task of the process (ProcessRow::nccl_tasks)
  NcclAttribution nccl;                       // how its verbs operations found their NCCL task
  ProcessSeries series;                     // binned over time, for the plots (series.h)
};

// One GPU of one process that rang doorbells (GPU-initiated QPs whose send queue is in its memory;
// gpu -1: QPs whose queues are in host memory).
struct GpuRow {
  uint32_t process_id = 0;
  int64_t gpu = -1;
  uint64_t qps = 0;
  DoorbellCounters doorbells;
  OpCounters ops;  // its QPs' recovered operations
};
std::string gpu_label(const ExperimentModel& m, uint32_t process_id, int64_t gpu);  // "rank 0 GPU 1"

struct Matrix {
  std::vector<std::string> labels;           // the last label is "unknown" (peer not traced)
  std::vector<std::vector<uint64_t>> bytes;  // [src][dst]: bytes that travelled from src to dst
  std::vector<std::vector<uint64_t>> ops;
};

struct Imbalance {
  double max_over_mean = 0;  // max / mean egress (1 = balanced)
  std::string max_label;
  uint64_t max_bytes = 0;
  double mean_bytes = 0;
};

struct Aggregates {
  std::vector<OpCounters> qp;         // by qp_id
  // By qp_id, for QPs with no one peer (DC initiators: a target per operation): their operations
  // by the process each went to (what the matrices count; the rest goes to "unknown").
  std::vector<std::map<uint32_t, OpCounters>> qp_by_peer;
  std::vector<ProcessCounters> process;  // by process_id
  std::vector<DoorbellCounters> qp_doorbells;  // by qp_id
  std::vector<QpOutstanding> qp_outstanding;   // by qp_id (Full mode)
  // Derived by finish():
  std::vector<OpCounters> device, host;
  Matrix rank_matrix, host_matrix;
  Matrix gpu_matrix;  // GPU-initiated traffic: GpuRow -> the GpuRow of the peer QP's queue (gpus' order)
  Imbalance host_egress, rank_egress;
  uint64_t heaviest_pair_bytes = 0;
  std::string heaviest_pair;
  std::vector<GpuRow> gpus;  // GPUs that rang doorbells, by process then GPU
  double mean_pair_bytes = 0;  // over pairs of different ranks that exchanged anything
  void init(const ExperimentModel& m);
  void finish(const ExperimentModel& m);

 private:
  template <typename F>
  void for_each_peer(const ExperimentModel& m, const QpRow& q, F&& f) const;
};

// What moved each way over a connection: a -> b is what a wrote, sent or did atomics with plus what
// b read from a. A QP connected to itself (qp_a == qp_b) counts each operation once: its writes
// a -> b, its reads b -> a.
struct ConnectionFlows {
  uint64_t ops_a_to_b = 0, bytes_a_to_b = 0, ops_b_to_a = 0, bytes_b_to_a = 0;
};
ConnectionFlows connection_flows(const ConnectionRow& c, const Aggregates& agg);

std::string process_label(const ProcessRow& p);
// "call <name>: <ERRNO>" (errno name where it is one), "completion <STATUS>", "async <event>".
std::string error_kind(const std::string& kind, const std::string& what, int64_t error);  // "rank 3" or "host:pid" when the rank is unknown

}  // namespace sigmatrace::analysis
