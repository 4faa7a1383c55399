// trace.pftrace: the experiment as a Perfetto protobuf trace (TrackEvent), for ui.perfetto.dev and
// Perfetto's trace processor. Tracks nest host -> process -> thread, each process also has a track
// per QP and bytes/s counter tracks (per QP, per process). Calls are slices on their thread, work
// requests and completions are instants on their QP's track, and each send that consumes a receive
// carries a flow id that the peer's receive completion terminates (the ids are computed by both
// sides from the connection and the message's sequence number, see analysis/association.h).
// GPU-initiated work: per (process, GPU) a track of its doorbells (instants carrying QP, producer
// index, delta and the kernel running; with WQE recovery named "data doorbell" or "control
// doorbell", so the two get their own colours), one of its kernel launches and a bytes/s counter
// of its recovered operations; a doorbells/s counter per GPU-initiated QP; the recovered
// operations themselves as instants on their QP's track, like work requests.
// Timestamps are the normalized wall-clock ns (no clock id: used as trace time as they are).
// Every file's events go to their own packet sequence, buffered per file and appended to the
// output under a lock in large blocks; packets need no order in a Perfetto file.
#pragma once
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "analysis/experiment_model.h"
#include "analysis/records.h"

namespace sigmatrace::exporter {

// Track uuids: (kind << 56) | index.
enum class TrackKind : uint64_t {
  host = 1, process = 2, thread = 3, qp = 4, qp_bytes = 5, process_bytes = 6,
  gpu_doorbells = 7,  // index: gpu_track_index(process, gpu)
  gpu_kernels = 8,    // the same index
  qp_doorbells = 9,   // doorbells/s of a GPU-initiated QP
  gpu_bytes = 10,     // bytes/s of the operations recovered from a (process, GPU)'s queues
};
// One track per (process, GPU) (gpu -1: doorbells of QPs whose queues are in host memory).
constexpr uint64_t gpu_track_index(uint32_t process_id, int64_t gpu) { return uint64_t{process_id} * 1024 + static_cast<uint64_t>(gpu + 1); }
constexpr uint64_t track_uuid(TrackKind k, uint64_t index) { return (static_cast<uint64_t>(k) << 56) | (index + 1); }

class PerfettoExport : public analysis::ExperimentSink {
 public:
  ~PerfettoExport() override;
  // Opens the output (under a temporary name) and writes every track descriptor.
  bool open(const std::string& path, const analysis::ExperimentModel& model, std::string* error);
  std::unique_ptr<analysis::FileSink> open_file(uint32_t process_id) override;
  bool finish(std::string* error);  // closes and renames into place

  void append(const std::string& bytes);  // thread-safe
  const analysis::ExperimentModel& model() const { return *model_; }
  int64_t bin_ns() const { return bin_ns_; }
  // The (process, GPU) pairs that have GPU tracks (launches on another device go to (process, -1)).
  bool has_gpu_track(uint32_t process_id, int64_t gpu) const { return gpu_tracks_.count({process_id, gpu}) != 0; }

 private:
  const analysis::ExperimentModel* model_ = nullptr;
  FILE* f_ = nullptr;
  bool ok_ = true;
  std::string path_, tmp_path_;
  std::mutex mu_;
  int64_t bin_ns_ = 1000000;
  std::set<std::pair<uint32_t, int64_t>> gpu_tracks_;
};

}  // namespace sigmatrace::exporter
