// Encoding and compressing full chunks on several threads (SIGMATRACE_WRITER_THREADS > 1), for
// Full-mode rates beyond what the writer thread seals alone. The writer stays the only thread that
// writes the file and keeps its counts: it hands chunks out round-robin, one per sealing thread at
// a time, and takes the results back in the same order, so the file's chunk order (and so each
// thread's event order) is the order in which chunks were handed over. Sealing threads sleep in a
// futex wait when there is nothing to seal and run with all signals blocked, like the writer.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "format/chunk_sealer.h"

namespace sigmatrace::profiler {

class SealPipeline {
 public:
  struct Job {
    uint32_t chunk = 0, slot = 0, tid = 0;
    const uint8_t* raw = nullptr;
    size_t raw_bytes = 0;
    format::Codec codec = format::Codec::none;
    bool sealed = false;  // false: the chunk held no valid event
    format::ChunkSealer::Sealed out;
  };

  SealPipeline() = default;
  SealPipeline(const SealPipeline&) = delete;
  SealPipeline& operator=(const SealPipeline&) = delete;
  // Starts `threads` sealing threads; false (with none left running) when one cannot be started.
  bool start(uint32_t threads, size_t chunk_bytes);
  bool full() const { return in_flight_ == workers_.size(); }
  bool empty() const { return in_flight_ == 0; }
  // Writer thread only: hands one chunk to the next sealing thread (requires !full()).
  void submit(const Job& job);
  // Writer thread only: waits for the oldest chunk handed out and returns it sealed; valid until
  // release_oldest(), which makes its thread free for the next chunk.
  Job& wait_oldest();
  void release_oldest();
  bool on_sealing_thread() const;

 private:
  enum State : uint32_t { idle = 0, queued = 1, done = 2 };
  struct alignas(64) Worker {
    std::atomic<uint32_t> state{idle};
    Job job;
    format::ChunkSealer sealer;
    pthread_t thread{};
  };
  static void* thread_main(void* worker);

  std::vector<std::unique_ptr<Worker>> workers_;
  size_t oldest_ = 0, in_flight_ = 0;
};

}  // namespace sigmatrace::profiler
