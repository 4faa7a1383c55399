// The profiler's configuration, read from SIGMATRACE_* environment variables at start-up.
// Every value is validated; the first bad one makes parse fail with a one-line message naming the
// variable, the value and what is accepted, and the profiler then stays out of the way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "format/file_layout.h"

namespace sigmatrace::profiler {

enum class TraceMode { aggregate, simple, full };
const char* mode_name(TraceMode m);

// What happens to GPU doorbells (SIGMATRACE_DOORBELLS): off leaves the application's mapping of
// the NIC doorbell page alone; forward hijacks it, and pollers record and forward every doorbell;
// wqe also reads the work-queue entries each doorbell announced (docs/gpu-doorbells.md).
enum class DoorbellMode { off, forward, wqe };

// When kernels ended (SIGMATRACE_KERNEL_MARKERS; docs/gpu-doorbells.md, "Kernels"): on records an
// event without timing after each launch, its end bracketed by the pollers' looks; timed records
// a timed event, for the GPU's own end time (measured to slow GPU-initiated operations by 1-4 us
// each on an H100 under MPS: the timestamp is not free); off records none.
enum class KernelMarkers { off, on, timed };

// SIGMATRACE_WQE_BATCH=sync: the WQEs are read before their doorbell is forwarded (for debugging).
constexpr uint32_t kWqeBatchSync = 0;

struct Config {
  bool enabled = true;
  TraceMode mode = TraceMode::simple;
  std::vector<std::string> providers;  // enabled providers, resolved from the list (all by default)
  std::string output_dir;              // empty: default_experiment_dir()
  uint32_t buffer_mb = 64;             // chunk pool per process
  uint32_t chunk_kb = 256;
  format::Codec codec = format::Codec::zstd;
  // Threads that encode and compress full chunks; 1: the writer thread does it itself.
  uint32_t writer_threads = 1;
  uint32_t clock_sync_ms = 1000;
  uint32_t hang_dump_s = 0;            // record a hang_dump after this long without progress (0: off)
  uint32_t max_threads = 1024;
  bool force = false;
  std::string run_id;
  std::string host;                    // empty: gethostname()
  uint32_t debug_writer_delay_us = 0;  // fault injection: a writer that falls behind
  std::string debug_fail_provider;     // fault injection: a provider whose init fails
  // Testing: this process's wall clock reads this far ahead and gains this fast (a host whose
  // clock is off), for the analysis's clock correction to find (SIGMATRACE_DEBUG_CLOCK_SKEW).
  int64_t debug_clock_offset_ns = 0;
  double debug_clock_drift_ppm = 0;
  DoorbellMode doorbells = DoorbellMode::forward;
  std::vector<int> doorbell_cpus;      // pollers pinned round-robin to these CPUs (empty: not pinned)
  uint32_t doorbell_pages_per_poller = 64;  // a bounded pool: one thread per 64 pages
  uint32_t doorbell_spin_ms = 1000;    // a poller idle this long polls every 20 us instead of spinning
  KernelMarkers kernel_markers = KernelMarkers::on;  // an event after each launch while doorbells are hijacked
  // WQE slots copied before a batch is waited for and parsed (capped at each SQ's size), or
  // kWqeBatchSync.
  uint32_t wqe_batch = 128;
  // When the copies are enqueued: in the poller's first idle moment after the doorbell (or once
  // kWqeCopyChunk slots wait), or at once, right after forwarding (SIGMATRACE_WQE_COPY).
  bool wqe_copy_at_doorbell = false;
};

// known_providers: names a provider list may contain. Returns false with *error set. The
// variables, their values and defaults: config_variables.h.
bool parse_config(char** envp, const std::vector<std::string>& known_providers, Config* cfg, std::string* error);

}  // namespace sigmatrace::profiler
