// What the first pass learns about an experiment, small enough to hold in memory whatever the trace
// size: processes (identity, clock model, threads), the verbs objects they created (devices and
// their ports, QPs with their connection attributes, memory regions) and, after qp_topology, the
// connections between QPs. Events themselves are not kept: the second pass streams them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/clock_normalization.h"
#include "analysis/clock_sync.h"
#include "analysis/nccl_tasks.h"
#include "analysis/nvtx_ranges.h"
#include "analysis/experiment_scan.h"

namespace sigmatrace::analysis {

constexpr int64_t kNone = -1;  // "no such object" in id fields (NULL in SQL)

struct ThreadRow {
  uint32_t thread_id = 0;   // global, dense
  uint32_t process_id = 0;
  uint32_t tid = 0;
  std::string name;
  uint64_t events = 0;
};

struct PortRow {
  uint64_t port = 0, lid = 0, gid_prefix = 0, gid_iface = 0, link_layer = 0;
};

struct DeviceRow {
  uint32_t device_id = 0;  // global, dense
  uint32_t process_id = 0;
  uint64_t context = 0;    // handle in the process
  uint64_t node_guid = 0;
  std::string name;
  int64_t open_ns = 0;
  std::vector<PortRow> ports;
  const PortRow* port(uint64_t n) const;
};

// Hardware address of one end of a connection: (GID when known, else LID) + QP number.
struct HwEndpoint {
  uint64_t gid_prefix = 0, gid_iface = 0, lid = 0, qp_num = 0;
  bool has_gid() const { return gid_prefix || gid_iface; }
  bool operator==(const HwEndpoint&) const = default;
};
uint64_t hw_endpoint_hash(const HwEndpoint& e);
std::string gid_text(uint64_t prefix, uint64_t iface);  // "fe80:0000:...:0001"

struct QpRow {
  uint32_t qp_id = 0;  // global, dense
  uint32_t process_id = 0;
  int64_t device_id = kNone;
  uint64_t handle = 0, context = 0;
  uint32_t qp_num = 0;
  uint64_t qp_type = 0;
  uint64_t create_tsc = 0;
  int64_t create_ns = 0, destroy_ns = 0;  // destroy_ns 0: never destroyed in the trace
  uint64_t state = 0;                     // last state set by ibv_modify_qp
  uint64_t port = 0;
  bool has_remote = false;                // an RTR transition gave the remote QP and address
  uint64_t dest_qp_num = 0, remote_lid = 0, remote_gid_prefix = 0, remote_gid_iface = 0;
  uint64_t aggregate_lid = 0;             // aggregate mode (no device events): the LID its counters named
  HwEndpoint local;                       // filled by qp_topology from the device's port
  int64_t remote_qp_id = kNone;           // the paired QP (qp_topology)
  int64_t connection_id = kNone;
  HwEndpoint remote() const { return {remote_gid_prefix, remote_gid_iface, remote_lid, dest_qp_num}; }
  // GPU-initiated QPs (created with devx CREATE_QP): where the send queue lies, and its GPU.
  bool gpu_initiated = false;
  int64_t gpu = -1;                       // the GPU whose memory holds the SQ (-1: host memory)
  uint64_t sq_addr = 0, log_sq_size = 0, uar_page = 0;
};

struct MrRow {
  uint32_t mr_id = 0;
  uint32_t process_id = 0;
  uint64_t handle = 0, pd = 0, addr = 0, length = 0, access = 0, lkey = 0, rkey = 0, memory_kind = 0;
  int64_t gpu_ordinal = -1;
  int64_t reg_ns = 0, dereg_ns = 0;
};

struct ConnectionRow {
  uint32_t connection_id = 0;
  uint32_t qp_a = 0, qp_b = 0;  // qp_a < qp_b
};

struct ProcessRow {
  uint32_t process_id = 0;
  const FileSummary* file = nullptr;
  std::string host;
  uint32_t host_id = 0;
  long pid = 0, rank = -1;
  std::string mode;
  bool full_mode = false;  // per-WR events present: op rows are work requests, not calls
  ClockModel clock;
  std::unordered_map<uint32_t, uint32_t> thread_of_tid;  // tid -> thread_id
  // qp_num -> QPs with that number in creation order (numbers are reused after destroy).
  std::unordered_map<uint32_t, std::vector<uint32_t>> qps_by_num;
  int64_t first_ns = 0, last_ns = 0;
  std::unordered_map<uint64_t, std::string> kernel_names;  // CUfunction / cudaKernel_t -> name
  // Successful kernel launches in time order (rare: kept from the first pass, since a doorbell
  // recorded by a poller thread can come before its kernel's launch in file order).
  struct Launch {
    uint64_t tsc;
    uint64_t function;
    uint32_t tid = 0;  // the launching thread
  };
  std::vector<Launch> launches;                                   // on any GPU
  std::unordered_map<int64_t, std::vector<Launch>> launches_on;  // per GPU ordinal
  // When kernels ran, where the profiler saw them end (cuda_kernel_end): on its stream, a kernel
  // runs from its launch, or its predecessor's end if later, to its end. Per GPU, by start.
  struct Span {
    uint64_t start_tsc, end_tsc, function;
    uint64_t launch_tsc = 0;
    uint32_t tid = 0;  // the launching thread
    // False for a kernel no look saw running (untimed markers: a short kernel), shown from its
    // start to the look that found it done but given no doorbells: its successor's may come
    // before that look.
    bool attributable = true;
  };
  std::unordered_map<int64_t, std::vector<Span>> spans_on;
  // The kernel that rang a doorbell at tsc on gpu: the one running then by its span (the latest
  // started, when kernels of several streams overlap); else the one launched last before tsc
  // on gpu (on any GPU when gpu < 0 or none was launched there); null when unknown.
  const std::string* kernel_at(uint64_t tsc, int64_t gpu) const;
  // The launch kernel_at answers with (found false: none).
  struct KernelHit {
    bool found = false;
    uint64_t function = 0, launch_tsc = 0;
    uint32_t tid = 0;
  };
  KernelHit kernel_hit_at(uint64_t tsc, int64_t gpu) const;
  const std::string* kernel_name(const KernelHit& hit) const;  // null when unknown
  // The NVTX range (index in ranges.rows()) open on the launching thread when the kernel of hit
  // was launched: GPU-initiated work belongs where its kernel was launched; -1: none.
  int64_t launch_range(const KernelHit& hit) const;
  uint64_t span_slack_ticks = 0;  // a doorbell is seen a little after the GPU wrote it
  // When its first hang dump was recorded (ns on the normalized timeline; -1: none).
  int64_t first_hang_dump_ns() const;
  ProcessRanges ranges;           // NVTX
  std::vector<NcclTaskRow> nccl_tasks;                        // NCCL's calls, in launch order
  std::unordered_map<uint64_t, uint32_t> nccl_task_index;     // the profiler's task number -> index
};

struct LayerModel;  // layer_ops.cpp: the UCX/libfabric peers and traffic of one experiment

struct ExperimentModel {
  std::string dir;
  ExperimentSummary scan;               // all files, usable or not
  std::vector<ProcessRow> processes;    // usable files, ordered by (rank, host, pid)
  std::vector<std::string> hosts;       // host_id -> name, sorted
  std::vector<ThreadRow> threads;
  std::vector<DeviceRow> devices;
  std::vector<QpRow> qps;
  std::vector<MrRow> mrs;
  std::vector<ConnectionRow> connections;
  int64_t start_ns = 0, end_ns = 0;     // over all processes' thread events
  ClockSyncResult clock_sync;           // the hosts' clocks as the messages compare them (corrected or not)
  // Who is whose UCX/libfabric peer, found from every file's control events after the first pass
  // (build_layer_model); the second pass adds traffic to it. Owned by this model: two analyses
  // never share one.
  std::shared_ptr<LayerModel> layers;
  // The QP a data-path event at tsc refers to: the last one with that number created before it.
  int64_t qp_at(uint32_t process_id, uint64_t qp_num, uint64_t tsc) const;
};

// First pass: scans every file in parallel (threads: 0 = all cores), collects the verbs objects,
// fits the clocks, orders processes and pairs QPs (qp_topology). bytes_done advances for progress.
// clock_sync: whether hosts' clocks are corrected from the messages between them (clock_sync.h).
ExperimentModel build_experiment_model(const std::string& dir, unsigned threads, std::atomic<uint64_t>* bytes_done,
                                       ClockSyncMode clock_sync = ClockSyncMode::automatic);

}  // namespace sigmatrace::analysis
