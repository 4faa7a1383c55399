// First pass over an experiment: read every trace file (in parallel, one chunk at a time) and
// summarise what it holds: identity, threads, event counts by type, clock samples, drops, damage.
// `sigmatrace info` prints this; the analysis passes start from it.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/schema.h"
#include "format/trace_reader.h"

namespace sigmatrace::analysis {

// realtime_ns(tsc) = anchor_realtime_ns + intercept_ns + ns_per_tick * (tsc - anchor_tsc).
// Anchored at the first sample and kept in integers there: a double cannot hold today's
// realtime (~1.8e18 ns) to the nanosecond, a difference from the anchor can.
struct ClockFit {
  bool valid = false;    // at least two samples far enough apart
  double ns_per_tick = 0;
  uint64_t anchor_tsc = 0;
  int64_t anchor_realtime_ns = 0;
  double intercept_ns = 0;
  double max_residual_ns = 0;
  size_t samples = 0;
  int64_t to_realtime_ns(uint64_t tsc) const {
    double d = static_cast<double>(static_cast<int64_t>(tsc - anchor_tsc));
    return anchor_realtime_ns + static_cast<int64_t>(std::llround(intercept_ns + ns_per_tick * d));
  }
};

struct ClockSamplePoint {
  uint64_t tsc;
  uint64_t realtime_ns;
  uint64_t monotonic_ns;
};

// Least-squares fit realtime = a + b * tsc over the samples (drift shows as b != nominal).
ClockFit fit_clock(const std::vector<ClockSamplePoint>& samples);

struct ThreadSummary {
  uint32_t tid = 0;
  std::string name;
  uint64_t events_in_file = 0;   // counted while reading
  uint64_t events_recorded = 0;  // as the writer reported at the end (thread_summary)
  uint64_t events_dropped = 0;
  uint64_t chunks_dropped = 0;   // buffered but never written (write failure)
  uint64_t aggregate_overflow = 0;
  bool has_summary = false;
  // The newest thread_progress: events recorded by then (written or still buffered), and when.
  uint64_t progress_recorded = 0;
  uint64_t progress_tsc = 0;
};

// The file could not be written any more (write_failure): where it was cut back, and what was lost.
struct WriteFailure {
  bool failed = false;
  std::string error;
  uint64_t file_bytes = 0;
  uint64_t chunks_lost = 0;
  uint64_t events_lost = 0;
};

// A hang_dump record (sigmatrace profile --hang-dump): when, why (1: no progress for idle_ns; 2:
// SIGUSR1) and the completions the process had polled by then.
struct HangDump {
  uint64_t tsc = 0, reason = 0, idle_ns = 0, completions = 0;
  uint64_t gpu_kernels_running = 0;  // marked kernels not seen to end by then
};

struct ProviderState {
  std::string name;
  bool enabled = false;
  std::string detail;
};

struct FileSummary {
  std::string path;
  bool usable = false;        // the header could be read
  std::string error;          // why not
  format::Metadata meta;
  uint16_t version_major = 0, version_minor = 0;
  uint64_t file_bytes = 0;
  uint64_t chunks = 0;
  uint64_t events = 0;
  std::map<std::string, uint64_t> events_by_type;
  std::map<uint32_t, ThreadSummary> threads;
  std::vector<ProviderState> providers;
  std::vector<ClockSamplePoint> clock_samples;
  // Aggregate mode's endpoint-pair counters (local, remote: lid << 32 | qp_num): the only trace of
  // a QP's identity when nothing was timestamped.
  std::vector<std::pair<uint64_t, uint64_t>> aggregate_endpoint_pairs;
  ClockFit clock;
  uint64_t first_tsc = 0, last_tsc = 0;  // over thread events (process stream excluded)
  bool has_file_end = false;
  uint64_t file_end_tsc = 0;  // when the process ended (its file_end record)
  uint64_t end_chunks_written = 0, end_events_written = 0, end_events_dropped = 0, end_exit_reason = 0;
  std::vector<format::LossRecord> losses;
  uint64_t chunks_missing = 0;
  uint64_t undecodable_chunks = 0;  // chunks whose events could not all be decoded
  // rank_update events (the mpi provider): MPI_COMM_WORLD's own answer once MPI_Init returned.
  long mpi_rank = -1;
  std::string mpi_rank_source;
  WriteFailure write_failure;
  std::vector<HangDump> hang_dumps;
  uint64_t events_dropped() const;
  // A file without an end record (killed, crashed): events its threads had recorded by their last
  // progress record that are not in the file — a lower bound on what is missing.
  uint64_t events_missing_at_least() const;
  uint64_t last_progress_tsc() const;
  std::string meta_value(const std::string& key) const;
  // The process's rank: MPI's own (MPI_COMM_WORLD) when it was recorded, else the launcher's
  // (metadata), -1 when neither is known.
  long rank() const;
};

struct ExperimentSummary {
  std::string dir;
  std::vector<FileSummary> files;
  std::vector<std::string> skipped;  // files that could not be used at all, with reasons
};

// Optional extras for callers that need more than the summary (the analysis collects its
// control-plane objects in the same pass, so files are not read once more for them).
struct ScanHooks {
  // Called for every decoded event of a thread chunk (tid != 0); the event is only valid during the call.
  std::function<void(uint32_t tid, const format::DecodedEvent&)> on_thread_event;
  std::atomic<uint64_t>* bytes_done = nullptr;  // advanced by each chunk's stored size (progress)
  // When set, thread events of other types reach on_thread_event without fields (skipped, not
  // decoded): indexed by type id.
  const std::vector<bool>* thread_types_wanted = nullptr;
};

// threads: 0 = one per hardware thread.
ExperimentSummary scan_experiment(const std::string& dir, unsigned threads);
FileSummary scan_trace_file(const std::string& path, const ScanHooks* hooks = nullptr);

const char* exit_reason_name(uint64_t reason);

}  // namespace sigmatrace::analysis
