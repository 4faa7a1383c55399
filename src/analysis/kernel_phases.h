// A GPU kernel's recovered operations cut into phases: runs of operations of one kind within one
// launch, in time order. Data operations move payload; control operations only signal (atomics,
// NOPs, puts of at most 8 bytes: barriers, flags, signals; op_moves_data). A persistent kernel that
// exchanges data and meets the others at a device barrier, level after level, alternates a data
// phase and a control phase per level, and a control phase's first operation is when its GPU
// arrived at that barrier (series_json lines them up across processes: "barriers").
//
// Operations reach the analysis in file order, which is not time order when a poller parses
// several QPs' batches (each batch after its copy): they pass through a bounded reorder window
// first, ordered by (time, op_id); one that comes later than the window can mend is still counted
// in the phase going on, and counted as out of order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace sigmatrace::analysis {

inline constexpr size_t kMaxKernelPhases = 2048;     // per kernel and GPU of a process; later ones counted
inline constexpr size_t kPhaseReorderOps = 1 << 16;  // operations held back to be put in time order

struct KernelPhase {
  bool data = false;
  uint32_t launch = 0;  // which launch of the kernel on this GPU, from 0, in time order
  int64_t first_ns = 0, last_ns = 0;
  uint64_t ops = 0, bytes = 0;
};

// The phases of one kernel on one GPU of a process.
struct KernelPhases {
  std::vector<KernelPhase> phases;  // the first kMaxKernelPhases
  uint64_t dropped = 0;             // phases after those (their operations are counted elsewhere all the same)
  uint64_t ops_out_of_order = 0;    // operations older than the reorder window could place
  uint32_t launches = 0;            // launches with recovered operations
  // Where the last operation left off: its launch, time and kind.
  uint64_t last_launch_tsc = 0;
  int64_t last_ns = 0;
  bool last_data = false;
};

// Builds the KernelPhases of one file's kernels (one per worker: not shared).
class KernelPhaseBuilder {
 public:
  // An operation of the kernel whose phases are `to` (kept alive until finish()).
  void add(KernelPhases* to, int64_t ts_ns, uint64_t op_id, uint64_t launch_tsc, bool data, uint64_t ops, uint64_t bytes);
  void finish();  // the file is done: every operation held back goes in

 private:
  struct Pending {
    int64_t ts_ns;
    uint64_t op_id, launch_tsc, ops, bytes;
    KernelPhases* to;
    bool data;
    bool operator>(const Pending& o) const { return ts_ns != o.ts_ns ? ts_ns > o.ts_ns : op_id > o.op_id; }
  };
  static void place(const Pending& p);
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> window_;
};

}  // namespace sigmatrace::analysis
