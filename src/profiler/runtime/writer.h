// The one background thread per process that turns full chunks into compressed file chunks,
// takes periodic clock samples, and performs the final flush (normal exit, signal, exec).
// Application threads never wait for it: when it falls behind they drop and count.
#pragma once
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "format/chunk_sealer.h"
#include "format/event_types.h"

namespace sigmatrace::profiler {

struct Runtime;

class Writer {
 public:
  explicit Writer(Runtime* rt) : rt_(rt) {}
  bool start();
  // Asks for the final flush and waits for it (at most timeout_ms; 0 = wait for ever).
  // Safe to call from a signal handler (only atomics and nanosleep).
  bool finish(format::ExitReason reason, uint32_t timeout_ms);
  bool finished() const { return done_.load(std::memory_order_acquire); }
  bool on_writer_thread() const;

 private:
  static void* thread_main(void* self);
  void run();
  bool drain_full_chunks();
  void write_chunk(uint32_t tid, const uint8_t* raw, size_t raw_bytes);
  void flush_process_stream();
  void final_flush(format::ExitReason reason);
  void emit_new_thread_infos();
  bool write_all(const void* a, size_t an, const void* b, size_t bn);
  void fail(const char* what);

  Runtime* rt_;
  pthread_t thread_{};
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<int> exit_reason_{0};
  bool io_failed_ = false;
  uint32_t seq_ = 0;
  uint64_t chunks_written_ = 0;
  uint64_t events_written_ = 0;
  uint64_t chunks_discarded_ = 0;
  uint64_t malformed_ = 0;
  uint32_t threads_announced_ = 0;
  std::vector<uint64_t> events_per_slot_;
  format::ChunkSealer sealer_;
  std::vector<uint8_t> process_raw_;
};

}  // namespace sigmatrace::profiler
