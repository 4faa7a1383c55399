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

// A recorded thread's place. A slot is reused once its thread has exited and the writer has
// written the thread's last chunk and its summary (programs that start and end threads all the
// time would otherwise run out of slots after SIGMATRACE_MAX_THREADS threads).
struct ThreadSlot {
  std::atomic<uint8_t> active;  // 1 while the thread lives
  uint32_t tid;
  char name[16];
  ThreadState* state;            // the thread's TLS state, valid while active
  std::atomic<uint64_t> dropped_events;
  AggregateTable* aggregate;
  // Bumped by every thread that takes the slot, after tid/name/state/active are set: the writer
  // tells a new occupant from the one it has already announced or summarised.
  std::atomic<uint32_t> generation;
  uint32_t next_free;  // free-list link: index + 1 of the next free slot, 0 at the end
};

// Free slots, a lock-free stack: the writer pushes, attaching threads pop. The head carries a
// tag bumped on every change so that a slot popped and pushed back meanwhile is noticed (ABA).
class FreeSlots {
 public:
  void push(ThreadSlot* slots, uint32_t idx) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    do {
      slots[idx].next_free = static_cast<uint32_t>(head);
    } while (!head_.compare_exchange_weak(head, tagged(head, idx + 1), std::memory_order_release, std::memory_order_relaxed));
  }
  bool pop(ThreadSlot* slots, uint32_t* idx) {
    uint64_t head = head_.load(std::memory_order_acquire);
    while (static_cast<uint32_t>(head) != 0) {
      uint32_t top = static_cast<uint32_t>(head) - 1;
      uint32_t next = __atomic_load_n(&slots[top].next_free, __ATOMIC_RELAXED);
      if (head_.compare_exchange_weak(head, tagged(head, next), std::memory_order_acquire, std::memory_order_acquire)) {
        *idx = top;
        return true;
      }
    }
    return false;
  }

 private:
  static uint64_t tagged(uint64_t old, uint32_t low) { return (((old >> 32) + 1) << 32) | low; }
  std::atomic<uint64_t> head_{0};
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
  std::atomic<uint32_t> slots_used{0};    // slots ever taken fresh (can exceed max_slots: then none was left)
  // Events the recorded threads dropped so far (what the benchmarks check around a measurement).
  uint64_t thread_events_dropped() const {
    uint64_t n = 0;
    for (uint32_t i = 0; i < slots_used.load() && i < max_slots; ++i) n += slots[i].dropped_events.load();
    return n;
  }
  FreeSlots free_slots;                    // slots of exited threads, summarised, ready for reuse
  std::atomic<uint64_t> threads_exited{0};  // tells the writer to look for slots to summarise
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
