// The cost of the profiler's hot path, next to its floor: a bare RDTSC, one timestamped event
// (record<>), one dropped event, one aggregate update (aggregate_add). Single thread and several threads.
// Run with the configuration set in main(); results and the command are in docs/performance.md.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstdio>
#include <unistd.h>

#include <vector>

#include "format/event_types.h"
#include "profiler/lifecycle/lifecycle.h"
#include "profiler/runtime/recorder.h"
#include "profiler/runtime/runtime.h"
#include "profiler/runtime/tsc.h"

using namespace sigmatrace::profiler;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::EventType;

static void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(read_tsc());
}

// The writer drains ~10-20 M events/s; the hot path records several times faster. So that the
// measurement stays on the recording path (and not the cheaper dropping path), the clock stops to
// let the writer catch up. `dropped` must read 0.
static void wait_for_writer() {
  while (g_runtime->pool.free_count_estimate() + g_runtime->slots_used.load() + 1 < g_runtime->pool.count())
    usleep(200);
}

// events_between_pauses: a chunk's worth pauses right after each chunk is handed over, so the
// writer compresses it while the clock is stopped (the application thread's cost alone); twice
// that lets the writer work on one chunk while the next is being filled (on a 2-vCPU VM whose
// vCPUs share a core, that competition shows in the figure).
static void timestamped_events(benchmark::State& state, uint64_t events_between_pauses) {
  uint64_t dropped_before = g_runtime->thread_events_dropped();
  uint64_t i = 0;
  for (auto _ : state) {
    record<EventType::user_mark>(i, i);
    if (++i % events_between_pauses == 0) {
      state.PauseTiming();
      wait_for_writer();
      state.ResumeTiming();
    }
  }
  state.counters["dropped"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped_before);
}

static uint64_t events_per_chunk() { return g_runtime->pool.chunk_bytes() / sigmatrace::format::raw_event_bytes(2); }

static void BM_TimestampedEvent(benchmark::State& state) { timestamped_events(state, events_per_chunk()); }
static void BM_TimestampedEventWriterBusy(benchmark::State& state) { timestamped_events(state, 2 * events_per_chunk()); }

// The dropping path: the pool is held empty (every free chunk taken, and the writer made to sit on
// each chunk it is given for 100 ms) so that nearly every event finds no room and is counted as
// dropped. Dropping must cost the application no more than recording (BM_TimestampedEvent).
static void BM_DroppedEvent(benchmark::State& state) {
  __atomic_store_n(&g_runtime->config.debug_writer_delay_us, 100000u, __ATOMIC_RELAXED);
  std::vector<uint32_t> held;
  for (uint32_t c; (c = g_runtime->pool.pop_free()) != kNoChunk;) held.push_back(c);
  uint64_t dropped_before = g_runtime->thread_events_dropped(), i = 0;
  for (auto _ : state) record<EventType::user_mark>(i, i), ++i;
  state.counters["dropped_fraction"] = static_cast<double>(g_runtime->thread_events_dropped() - dropped_before) / static_cast<double>(i ? i : 1);
  __atomic_store_n(&g_runtime->config.debug_writer_delay_us, 0u, __ATOMIC_RELAXED);
  for (uint32_t c : held) g_runtime->pool.push_free(c);
}

static void BM_AggregateUpdate(benchmark::State& state) {
  uint64_t i = 0;
  for (auto _ : state) {
    aggregate_add(AggregateKey::user_mark, i & 15, 0, 64);
    ++i;
  }
}

// The floor of a timestamped event without the recorder: one RDTSC, then `words` 8-byte stores
// at a cursor moving through a buffer of `buffer_kb` (32: always in L1; 262144: new memory at
// every line, as a chunk pool cycling through more than the caches), with `prefetch_lines` lines
// ahead prefetched for writing (0: none). Says how much of an event's cost over a bare RDTSC is
// the stores' memory traffic and how much the instructions around the RDTSC.
static void BM_RdtscThenStores(benchmark::State& state) {
  const uint64_t words = static_cast<uint64_t>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1)) * 1024;
  const int64_t prefetch_lines = state.range(2);
  std::vector<uint64_t> buffer(bytes / 8 + 64);
  for (uint64_t& w : buffer) w = 0;  // faulted in before the clock starts
  uint64_t* const begin = buffer.data();
  uint64_t* const end = begin + bytes / 8 - words;
  uint64_t* cur = begin;
  for (auto _ : state) {
    if (prefetch_lines) __builtin_prefetch(reinterpret_cast<char*>(cur) + prefetch_lines * 64, 1, 3);
    const uint64_t tsc = read_tsc();
    cur[0] = tsc;
    for (uint64_t i = 1; i < words; ++i) cur[i] = i;
    cur += words;
    if (cur >= end) cur = begin;
    benchmark::DoNotOptimize(cur);
  }
}

BENCHMARK(BM_Rdtsc)->ThreadRange(1, 2);
BENCHMARK(BM_RdtscThenStores)->ArgNames({"words", "buffer_kb", "prefetch_lines"})
    ->Args({1, 32, 0})->Args({4, 32, 0})->Args({7, 32, 0})->Args({11, 32, 0})
    ->Args({4, 262144, 0})->Args({7, 262144, 0})->Args({11, 262144, 0})
    ->Args({4, 262144, 4})->Args({7, 262144, 4})->Args({11, 262144, 4});
BENCHMARK(BM_TimestampedEvent)->ThreadRange(1, 4)->MinTime(0.2);
BENCHMARK(BM_TimestampedEventWriterBusy)->Threads(1)->MinTime(0.2);
BENCHMARK(BM_DroppedEvent)->Threads(1)->MinTime(0.2);
BENCHMARK(BM_AggregateUpdate)->ThreadRange(1, 4);

int main(int argc, char** argv) {
  // lz4 keeps the writer fast; the trace goes to a scratch directory.
  setenv("SIGMATRACE_BUFFER_MB", "256", 0);
  setenv("SIGMATRACE_CHUNK_KB", "1024", 0);
  setenv("SIGMATRACE_COMPRESSION", "lz4", 0);
  setenv("SIGMATRACE_FORCE", "1", 0);
  setenv("SIGMATRACE_OUTPUT", "/tmp/sigmatrace-bench-recorder", 0);
  if (!start_runtime()) {
    std::fprintf(stderr, "recorder_hot_path_bench: the runtime did not start\n");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  stop_runtime();
  return 0;
}
