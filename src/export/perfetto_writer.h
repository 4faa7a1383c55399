// trace.pftrace: the experiment as a Perfetto protobuf trace (TrackEvent), for ui.perfetto.dev and
// Perfetto's trace processor, written so that Perfetto's own importer reads it as meant (checked by
// tests/support/timeline_check on every experiment the tests analyse):
// - Processes and threads are Perfetto's own (ProcessDescriptor with pid, name and labels,
//   ThreadDescriptor with tid and name), so pid/tid search and a selected slice's process and
//   thread work. Perfetto puts processes at the top of its tree, so a host is a root track with
//   the host's bytes/s, and its processes follow it (explicit order, "host X" label).
// - Each process has a track per QP. Its work requests are slices from post to completion on
//   "send queue" / "receive queue" lanes (as many as were in flight at once; same-named lanes
//   merge into one track in the UI), its completions instants on "completions". A WR whose
//   completion is not known (unsignalled at the end, Simple mode's post calls) is an instant.
//   UCX/libfabric operations get such lanes per process and layer.
// - Calls are slices on their thread where their duration was recorded (the control path), else
//   instants.
// - Flows (arrows) run forward in time only: a WR to the completion that reported it, a send
//   that consumed a receive (SEND*, WRITE_IMM, UCX/libfabric messages) to the receive's completion
//   on the peer (ids computed by each side alone, see analysis/flow_ids.h, association.h).
// - GPU-initiated work: per (process, GPU) a track of its doorbells (instants carrying QP, producer
//   index, delta and the kernel running; with WQE recovery named "data doorbell" or "control
//   doorbell", so the two get their own colours), one of its kernel launches, its kernels' run
//   times as slices where the profiler saw them end, and a bytes/s counter of its recovered
//   operations; a doorbells/s counter per GPU-initiated QP; the recovered operations themselves as
//   instants on their QP's send queue.
// - Timestamps are the normalized CLOCK_REALTIME ns; a clock snapshot declares REALTIME the trace
//   clock, so the UI can show wall-clock time.
// Every file's events go to their own packet sequence (perfetto_sequence.h: interned texts, the
// sequence's own clock, deflate-compressed blocks), buffered per file and appended to the output
// under a lock in large blocks; packets need no order in a Perfetto file.
#pragma once
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "export/direct_append_file.h"
#include "analysis/aggregates.h"
#include "analysis/experiment_model.h"
#include "analysis/records.h"
#include "export/timeline_selection.h"

namespace sigmatrace::exporter {

// Track uuids: ((index + 1) << 5) | kind, so that the uuids events name most (a QP's first lane,
// a thread) are short varints. A lane's index puts the lane above the group: lane 0 of group g is
// index g.
enum class TrackKind : uint64_t {
  host = 1, process = 2, thread = 3, qp = 4, qp_bytes = 5, process_bytes = 6,
  gpu_doorbells = 7,  // index: gpu_track_index(process, gpu)
  gpu_kernels = 8,    // the same index: kernel launches
  qp_doorbells = 9,   // doorbells/s of a GPU-initiated QP
  gpu_bytes = 10,     // bytes/s of the operations recovered from a (process, GPU)'s queues
  send_lane = 11,     // index: lane_index(qp, lane)
  recv_lane = 12,     // the same
  completions = 13,   // index: qp
  layer_lane = 14,    // index: lane_index(process * kLayerCount + layer_index(layer), lane): UCX / libfabric operations
  kernel_lane = 15,   // index: lane_index(gpu_track_index(process, gpu), lane): kernels' run times
  host_bytes = 16,    // index: host
  process_ops = 17,   // index: process: operations/s, where the budget summarised the timeline
  nvtx_lane = 18,     // index: lane_index(thread, lane): NVTX ranges of a thread (nested ones on lanes below)
  nccl_lane = 19,     // index: lane_index(process, lane): NCCL tasks' network parts
};
constexpr uint32_t kTrackKindBits = 5;
// One track per (process, GPU) (gpu -1: doorbells of QPs whose queues are in host memory).
constexpr uint64_t gpu_track_index(uint32_t process_id, int64_t gpu) { return uint64_t{process_id} * 1024 + static_cast<uint64_t>(gpu + 1); }
constexpr uint32_t kLaneBits = 16;        // lanes per group: more slices in flight at once become instants
constexpr uint32_t kLaneGroupBits = 32;   // groups: QPs, (process, layer), (process, GPU)
constexpr uint64_t lane_index(uint64_t group, uint32_t lane) { return (uint64_t{lane} << kLaneGroupBits) | group; }
constexpr uint64_t lane_group(uint64_t index) { return index & ((uint64_t{1} << kLaneGroupBits) - 1); }
constexpr uint64_t track_uuid(TrackKind k, uint64_t index) { return ((index + 1) << kTrackKindBits) | static_cast<uint64_t>(k); }
constexpr TrackKind track_kind(uint64_t uuid) { return static_cast<TrackKind>(uuid & ((1u << kTrackKindBits) - 1)); }
constexpr uint64_t track_index(uint64_t uuid) { return (uuid >> kTrackKindBits) - 1; }
// The track of lane `lane` of the group whose lane 0 is `lane0`.
constexpr uint64_t lane_track(uint64_t lane0, uint32_t lane) { return lane0 + (uint64_t{lane} << (kLaneGroupBits + kTrackKindBits)); }

// The pid and tid Perfetto is given: the real ones, unless two hosts of the experiment have a
// process (thread) with the same number, which Perfetto would merge into one; then the host's
// index is added above the kernel's pid range (the real numbers stay in the names and labels).
struct PerfettoIds {
  std::vector<int64_t> pid;  // per process_id
  std::vector<int64_t> tid;  // per thread_id
};
PerfettoIds perfetto_ids(const analysis::ExperimentModel& m);

class PerfettoExport : public analysis::ExperimentSink {
 public:
  ~PerfettoExport() override;
  // Opens the output (under a temporary name) and writes the clock snapshot and the track
  // descriptors known before the pass (lanes are described by the files that use them).
  // `compress`: deflate the files' packet blocks (off: plain packets, e.g. for protoc --decode).
  // `selection`: what goes in (timeline_selection.h). `agg`: the pass's aggregates, of which a
  // file's sink reads its process's once the file's associators have finished (NCCL calls' spans).
  bool open(const std::string& path, const analysis::ExperimentModel& model, const analysis::Aggregates* agg, bool compress,
            const TimelineSelection& selection, std::string* error);
  std::unique_ptr<analysis::FileSink> open_file(uint32_t process_id) override;
  bool finish(std::string* error);  // writes the host counters, closes and renames into place

  void append(std::string_view bytes);  // thread-safe
  void add_host_bytes(uint32_t host, const std::vector<uint64_t>& bins);  // thread-safe
  const analysis::ExperimentModel& model() const { return *model_; }
  const analysis::Aggregates& aggregates() const { return *agg_; }
  const PerfettoIds& ids() const { return ids_; }
  int64_t bin_ns() const { return bin_ns_; }
  bool compress() const { return compress_; }
  const TimelineSelection& selection() const { return selection_; }
  // Events outside the selection, and operations after the budget's cut-off (as counters).
  void add_left_out(uint64_t left_out, uint64_t summarised);  // thread-safe
  uint64_t left_out() const { return left_out_; }
  uint64_t summarised() const { return summarised_; }
  // The origin of every sequence's clock: 1 ms before the experiment starts (events a little
  // earlier, e.g. a kernel span, still get a small positive timestamp).
  int64_t origin_ns() const { return origin_ns_; }
  // The (process, GPU) pairs that have GPU tracks (launches on another device go to (process, -1)).
  bool has_gpu_track(uint32_t process_id, int64_t gpu) const { return gpu_tracks_.count({process_id, gpu}) != 0; }

 private:
  const analysis::ExperimentModel* model_ = nullptr;
  const analysis::Aggregates* agg_ = nullptr;
  PerfettoIds ids_;
  DirectAppendFile file_;
  std::string path_, tmp_path_;
  std::mutex mu_;
  int64_t bin_ns_ = 1000000;
  int64_t origin_ns_ = 0;
  bool compress_ = true;
  TimelineSelection selection_;
  uint64_t left_out_ = 0, summarised_ = 0;
  std::set<std::pair<uint32_t, int64_t>> gpu_tracks_;
  std::map<uint32_t, std::vector<uint64_t>> host_bins_;
};

}  // namespace sigmatrace::exporter
