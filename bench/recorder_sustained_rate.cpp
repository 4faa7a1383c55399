// How many events per second the recorder keeps up with, with the clock running through chunk
// hand-overs: N threads record Full-mode work-request events (ibv_send_wr, 9 fields, varying
// wr_id) at an offered rate for a duration, into a real experiment (writer thread, codec from
// SIGMATRACE_COMPRESSION), and the run reports what was offered, recorded and dropped, the bytes
// written, and what one event cost the recording thread (bursts of 64 timed with RDTSC, so the
// recording path and the dropping path are measured alike). bench/recorder_sustained_rate.sh
// searches the rate at which drops begin; results in docs/performance.md.
//
//   recorder_sustained_rate THREADS RATE_PER_THREAD SECONDS    (RATE 0: as fast as possible)
#include <immintrin.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "format/event_types.h"
#include "profiler/lifecycle/lifecycle.h"
#include "profiler/runtime/recorder.h"
#include "profiler/runtime/runtime.h"
#include "profiler/runtime/tsc.h"

using namespace sigmatrace::profiler;
using sigmatrace::format::EventType;

namespace {

constexpr uint64_t kBurst = 64;

double measure_ticks_per_ns() {
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const uint64_t t0 = read_tsc();
  timespec pause{0, 50000000};
  nanosleep(&pause, nullptr);
  const uint64_t t1 = read_tsc();
  clock_gettime(CLOCK_MONOTONIC, &b);
  const double ns = static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 + static_cast<double>(b.tv_nsec - a.tv_nsec);
  return static_cast<double>(t1 - t0) / ns;
}

uint64_t dropped_now() { return g_runtime->untracked_events_dropped.load() + g_runtime->thread_events_dropped(); }

struct ThreadResult {
  uint64_t offered = 0, busy_ticks = 0;
};

void record_for(uint64_t rate, uint64_t end_tsc, double ticks_per_ns, uint32_t index, ThreadResult* out) {
  const uint64_t ticks_per_burst = rate ? static_cast<uint64_t>(ticks_per_ns * 1e9 * kBurst / static_cast<double>(rate)) : 0;
  const uint64_t qpn = 0x100 + index;
  uint64_t wr_id = 0, next = read_tsc();
  ThreadResult r;
  for (;;) {
    const uint64_t t0 = read_tsc();
    if (t0 >= end_tsc) break;
    for (uint64_t k = 0; k < kBurst; ++k, ++wr_id)
      record<EventType::ibv_send_wr>(qpn, wr_id, uint64_t{0}, uint64_t{65536}, uint64_t{1}, 0x7f0000000000ull + (wr_id << 16), uint64_t{0x1234},
                                     uint64_t{(wr_id & 63) == 63 ? 2u : 0u}, uint64_t{0});
    r.busy_ticks += read_tsc() - t0;
    r.offered += kBurst;
    if (ticks_per_burst) {
      next += ticks_per_burst;
      while (read_tsc() < next) _mm_pause();
    }
  }
  *out = r;
}

uint64_t bytes_under(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: recorder_sustained_rate THREADS RATE_PER_THREAD SECONDS\n");
    return 2;
  }
  const uint32_t threads = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  const uint64_t rate = std::strtoull(argv[2], nullptr, 10);
  const double seconds = std::strtod(argv[3], nullptr);
  if (threads == 0 || threads > 256 || seconds <= 0) {
    std::fprintf(stderr, "recorder_sustained_rate: THREADS must be 1..256 and SECONDS > 0\n");
    return 2;
  }
  const std::string out = std::string("/tmp/sigmatrace-sustained-") + std::to_string(getpid());
  setenv("SIGMATRACE_OUTPUT", out.c_str(), 1);
  setenv("SIGMATRACE_FORCE", "1", 0);
  setenv("SIGMATRACE_COMPRESSION", "lz4", 0);
  if (!start_runtime()) {
    std::fprintf(stderr, "recorder_sustained_rate: the runtime did not start\n");
    return 1;
  }
  const double ticks_per_ns = measure_ticks_per_ns();
  const uint64_t dropped_before = dropped_now();
  const uint64_t start = read_tsc(), end = start + static_cast<uint64_t>(seconds * 1e9 * ticks_per_ns);
  std::vector<ThreadResult> results(threads);
  std::vector<std::thread> workers;
  for (uint32_t i = 0; i < threads; ++i) workers.emplace_back(record_for, rate, end, ticks_per_ns, i, &results[i]);
  for (std::thread& t : workers) t.join();
  const double elapsed_s = static_cast<double>(read_tsc() - start) / ticks_per_ns / 1e9;
  const uint64_t dropped = dropped_now() - dropped_before;
  const std::string dir = g_runtime->experiment_dir;
  stop_runtime();
  uint64_t offered = 0, busy = 0;
  for (const ThreadResult& r : results) offered += r.offered, busy += r.busy_ticks;
  const uint64_t bytes = bytes_under(dir);
  const uint64_t recorded = offered - dropped;
  std::printf("threads=%u codec=%s offered_per_s=%.0f recorded_per_s=%.0f dropped=%llu drop_fraction=%.6f "
              "ns_per_event=%.2f bytes=%llu bytes_per_event=%.2f mb_per_s=%.1f\n",
              threads, getenv("SIGMATRACE_COMPRESSION"), static_cast<double>(offered) / elapsed_s,
              static_cast<double>(recorded) / elapsed_s, static_cast<unsigned long long>(dropped),
              offered ? static_cast<double>(dropped) / static_cast<double>(offered) : 0.0,
              offered ? static_cast<double>(busy) / ticks_per_ns / static_cast<double>(offered) : 0.0, static_cast<unsigned long long>(bytes),
              recorded ? static_cast<double>(bytes) / static_cast<double>(recorded) : 0.0, static_cast<double>(bytes) / elapsed_s / 1e6);
  std::filesystem::remove_all(out);
  return 0;
}
