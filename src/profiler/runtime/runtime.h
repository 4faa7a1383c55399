// The profiler's process-wide state. Created once by the start-up code (lifecycle.cpp); null
// while the profiler is off, which every entry point checks before doing anything.
#pragma once
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <string>

#include "profiler/runtime/chunk_pool.h"
#include "profiler/runtime/config.h"
#include "profiler/runtime/identity.h"
#include "profiler/runtime/process_stream.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler {

enum class Phase : int { recording = 1, closing = 2, closed = 3 };

struct ThreadSlot {
  std::atomic<uint8_t> active;  // 1 while the thread lives
  uint32_t tid;
  char name[16];
  ThreadState* state;            // the thread's TLS state, valid while active
  std::atomic<uint64_t> dropped_events;
  AggregateTable* aggregate;
};

class Writer;

struct Runtime {
  Config config;
  Identity identity;
  std::atomic<int> phase{static_cast<int>(Phase::recording)};
  pid_t owner_pid = 0;
  ChunkPool pool;
  ThreadSlot* slots = nullptr;
  uint32_t max_slots = 0;
  std::atomic<uint32_t> slots_used{0};
  std::atomic<uint64_t> untracked_events_dropped{0};  // threads beyond max_threads
  ProcessStream process_stream;
  std::string experiment_dir;
  std::string run_id;
  std::string trace_path;
  int trace_fd = -1;
  int live_lock_fd = -1;
  Writer* writer = nullptr;
  pthread_key_t thread_exit_key{};
  bool tsc_invariant = true;

  bool recording() const { return phase.load(std::memory_order_relaxed) == static_cast<int>(Phase::recording); }
};

extern Runtime* g_runtime;

// Records a process-stream event stamped now (no-op while the profiler is off).
void record_process_event(format::EventType type, std::initializer_list<FieldValue> fields);

}  // namespace sigmatrace::profiler
