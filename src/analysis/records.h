// The records the second pass produces while it streams a file, and the sink interface the
// exporters (Perfetto, SQLite) implement. Records are handed over one at a time and not kept: an
// exporter that needs them later must copy what it needs (SQLite batches rows, Perfetto encodes).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/nvtx_ranges.h"

namespace sigmatrace::analysis {

// One operation: a work request (Full mode) or a post call (Simple mode).
// The layers an operation or call belongs to (OpRecord::layer), numbered as the outputs code them.
inline constexpr const char* kLayerNames[] = {"ibv", "gpu", "ucx", "ofi"};
inline constexpr unsigned kLayerCount = 4;
inline unsigned layer_index(std::string_view layer) {
  for (unsigned i = 0; i < kLayerCount; ++i)
    if (layer == kLayerNames[i]) return i;
  return 0;
}

struct OpRecord {
  uint64_t op_id = 0;          // unique in the experiment: process_id << 40 | n
  int64_t ts_ns = 0;           // post time, normalized
  int64_t dur_ns = -1;         // until its completion (Full); -1: no completion seen or Simple mode
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  const char* layer = "ibv";
  int64_t qp_id = -1;
  unsigned op_class = 0;       // analysis::OpClass
  uint64_t bytes = 0;
  uint32_t wr_count = 1;       // WRs in the call (Simple), 1 (Full)
  int64_t peer_process_id = -1;
  int64_t status = -1;         // ibv_wc_status of its completion (Full), result of the call (Simple); -1 unknown
  uint64_t wr_id = 0;
  uint64_t flow_id = 0;        // non-zero when the peer matches it with a receive completion
  // The completion that reported this WR itself (-1: none, or completed by a later signalled WR
  // of its send queue, as RC completes in order).
  int64_t completion_id = -1;
  bool signaled = true;        // send WR with IBV_SEND_SIGNALED (false: completes with a later one)
  bool is_call = false;
  // The NVTX range it belongs to (RangeRow::range_id; -1: none): the innermost one open on its
  // thread when it was posted; a GPU-initiated operation's, when its kernel was launched.
  int64_t range_id = -1;
  // The NCCL task (index in the process's nccl_tasks) whose data it moves; -1: none (nccl_tasks.h).
  int64_t nccl_task = -1;
};


struct CompletionRecord {
  uint64_t completion_id = 0;  // process_id << 40 | n
  int64_t ts_ns = 0;
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  int64_t qp_id = -1;
  uint64_t cq = 0, wr_id = 0, opcode = 0, status = 0, byte_len = 0, imm_data = 0, wc_flags = 0, src_qp = 0, vendor_err = 0;
  int64_t op_id = -1;          // the work request it completes, when seen
  uint64_t flow_id = 0;        // non-zero for a receive matched to the peer's send
  bool is_receive = false;
};

// A traced call shown as a slice on its thread (control path and, in Simple mode, post calls).
struct CallRecord {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;          // 0: the schema records a single timestamp per call
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  const char* name = "";
  int64_t qp_id = -1;
  uint64_t bytes = 0;
  uint64_t count = 0;          // WRs posted, completions polled, ...
  int64_t result = 0;
};

struct ErrorRecord {
  uint64_t error_id = 0;
  int64_t ts_ns = 0;
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  const char* layer = "ibv";
  std::string kind;            // "call", "completion", "async"
  std::string what;            // the failed call, the completion status, the async event type
  uint64_t object = 0;
  int64_t error = 0;
  int64_t qp_id = -1;
};

struct MarkRecord {
  int64_t ts_ns = 0;
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  uint64_t id = 0, value = 0;
};

// One doorbell a GPU rang (a change of a hijacked doorbell register, seen by a poller): which QP,
// the producer index it announced and how many WQEBBs that was since the QP's previous one.
struct DoorbellRecord {
  uint64_t doorbell_id = 0;    // process_id << 40 | n
  int64_t ts_ns = 0;           // when the poller saw it
  uint32_t process_id = 0;
  int64_t qp_id = -1;
  int64_t gpu = -1;            // the GPU whose memory holds the QP's send queue (-1: host memory / unknown)
  uint64_t qp_num = 0, producer_index = 0, delta = 0, uar_page = 0;
  bool blueflame = false;
  bool from_record = false;  // lost to another QP's store on a shared register, taken from the QP's record
  const std::string* kernel = nullptr;  // the kernel launched last on that GPU before it, if known
  // With WQE recovery (format::DoorbellWqeClass): 0 not read, 1 data (a WRITE, READ or SEND of
  // more than 8 bytes), 2 control (atomics, NOPs, small puts); and how many WQEs it announced.
  uint64_t wqe_class = 0, wqes = 0;
  int64_t range_id = -1;       // the NVTX range its kernel was launched in
};

// What a GPU-initiated operation's WQE said, besides its OpRecord (layer "gpu": opcode class,
// payload bytes, peer, doorbell time): recovered from the QP's send queue.
struct GpuWqeRecord {
  int64_t gpu = -1;
  const std::string* kernel = nullptr;
  uint64_t launch_tsc = 0;     // its kernel's launch (0: unknown): tells one launch from the next
  int64_t doorbell_id = -1;    // the doorbell that announced it (-1: not in the trace)
  uint64_t wqe_index = 0, opcode = 0, opmod = 0, flags = 0;  // control segment (mlx5 opcode, fm_ce_se)
  uint64_t remote_addr = 0, rkey = 0, local_addr = 0, lkey = 0, sges = 0;
  bool inline_data = false;
  uint64_t imm = 0, swap_add = 0, compare = 0;
};

// A kernel launch (driver or runtime entry point) of a process.
struct LaunchRecord {
  uint64_t launch_id = 0;
  int64_t ts_ns = 0;
  uint32_t process_id = 0;
  int64_t thread_id = -1;
  int64_t gpu = -1;
  uint64_t function = 0, stream = 0, entry = 0;
  uint64_t grid[3] = {}, block[3] = {};
  int64_t result = 0;
  const std::string* name = nullptr;
  int64_t range_id = -1;       // the NVTX range open on its thread
};

// One file's outputs. Called from the worker thread that analyses that file only.
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void call(const CallRecord&) {}
  virtual void work_request(const OpRecord&) {}  // at post time (dur unknown yet)
  virtual void op(const OpRecord&) {}            // final (after its completion, or at the end)
  virtual void completion(const CompletionRecord&) {}
  virtual void error(const ErrorRecord&) {}
  virtual void mark(const MarkRecord&) {}
  virtual void doorbell(const DoorbellRecord&) {}
  virtual void launch(const LaunchRecord&) {}
  // An NVTX range or mark of the file's process (all of them, before its events).
  virtual void range(const RangeRow&) {}
  // A GPU-initiated operation (final: it has no completion of its own in the trace).
  virtual void gpu_op(const OpRecord& op, const GpuWqeRecord&) {
    work_request(op);
    this->op(op);
  }
  virtual void finish() {}                       // the file is done
};

// An exporter: hands out one FileSink per analysed file (workers run in parallel).
class ExperimentSink {
 public:
  virtual ~ExperimentSink() = default;
  virtual std::unique_ptr<FileSink> open_file(uint32_t process_id) = 0;
};

}  // namespace sigmatrace::analysis
