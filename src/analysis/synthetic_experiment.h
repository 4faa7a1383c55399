// Synthetic experiments, written with format::TraceFileWriter exactly as the profiler writes them
// (file metadata, clock_sync samples, thread_info/thread_summary/provider_status/file_end on the
// process stream, verbs events on thread streams), for the analysis tests and benchmarks.
// Processes are connected by RC QP pairs and exchange messages; every event is generated at a known
// true wall-clock time and written with the process's own (skewed, drifting) TSC, so a test can check
// the normalized times, and the generator records what it wrote (bytes per rank pair, flows) so a
// test can check the analysis' totals against it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sigmatrace::analysis {

struct SyntheticClock {
  double ghz = 2.5;               // nominal TSC ticks per ns
  double drift_ppm = 0;           // rate error: ticks per ns = ghz * (1 + drift_ppm / 1e6)
  double drift_change_ppm_per_s = 0;  // the rate changes with time (quadratic term): not a line
  uint64_t tsc_at_start = 1000000000ull;  // skew: TSC value at the experiment's start
  // The process's wall clock (CLOCK_REALTIME, its host's): how far ahead it reads at the start
  // and how fast it gains (a host whose clock synchronisation is off).
  int64_t realtime_offset_ns = 0;
  double realtime_drift_ppm = 0;
};

struct SyntheticSpec {
  int processes = 4;
  int hosts = 2;                  // process r runs on host r % hosts ("node<h>")
  int threads_per_process = 1;    // QPs are spread round robin over the threads
  int qps_per_pair = 1;           // QP pairs between two connected processes
  bool all_to_all = false;        // false: ring (r <-> r+1)
  int messages_per_qp = 8;        // messages each side of each QP pair posts
  std::vector<unsigned> opcodes = {2 /*SEND*/, 0 /*WRITE*/, 1 /*WRITE_IMM*/, 4 /*READ*/};  // ibv_wr_opcode, cycled
  std::vector<uint64_t> sizes = {4096, 65536, 100};  // cycled; atomics are 8 bytes
  bool full_mode = true;          // false: Simple mode (one ibv_post_send / ibv_post_recv per call)
  int64_t start_ns = 1764400000000000000;  // true wall time of the start (2025-11-29)
  int64_t message_period_ns = 10000;
  int clock_samples = 5;          // clock_sync events spread over the run (at least 2 for a fit)
  std::vector<SyntheticClock> clocks;  // per process (missing: default clock, skewed by rank)
  uint64_t events_dropped = 0;    // reported by thread_summary of each thread (loss accounting)
  bool ranks_from_mpi = false;    // the launcher set no rank (metadata -1): a rank_update from MPI_COMM_WORLD says it
  size_t chunk_bytes = 64 * 1024;
  unsigned generator_threads = 1;  // processes written in parallel
};

// What was written, for the tests to compare with.
struct SyntheticTruth {
  int processes = 0;
  std::vector<std::vector<uint64_t>> bytes;  // [src rank][dst rank]: bytes that travelled src -> dst
  std::vector<std::vector<uint64_t>> ops;    // [initiator][target]: work requests (WRs) posted
  uint64_t flows = 0;                         // messages that consume a receive (SEND*, WRITE_IMM)
  uint64_t events = 0;                        // written, all files
  uint64_t qps = 0, connections = 0;
  int64_t end_ns = 0;
  std::vector<std::string> files;
};

// Writes the experiment into dir (created if needed). Returns the truth; throws nothing, aborts
// the test on I/O errors via an empty files list.
SyntheticTruth write_synthetic_experiment(const std::string& dir, const SyntheticSpec& spec);

// The TSC a process with this clock reads at true wall time ns.
uint64_t synthetic_tsc(const SyntheticClock& c, int64_t start_ns, int64_t ns);
SyntheticClock synthetic_clock_for(const SyntheticSpec& spec, int rank);
uint32_t synthetic_qp_num(const SyntheticSpec& spec, int rank, int peer, int index);
std::string synthetic_host(const SyntheticSpec& spec, int rank);

}  // namespace sigmatrace::analysis
