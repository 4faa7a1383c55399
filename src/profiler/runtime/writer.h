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
#include "profiler/runtime/hang_watch.h"
#include "profiler/runtime/seal_pipeline.h"

namespace sigmatrace::profiler {

struct Runtime;
struct ClockSample;

class Writer {
 public:
  explicit Writer(Runtime* rt) : rt_(rt) {}
  bool start();
  // Asks for the final flush and waits for it (at most timeout_ms; 0 = wait for ever).
  // Safe to call from a signal handler (only atomics and nanosleep).
  bool finish(format::ExitReason reason, uint32_t timeout_ms);
  bool finished() const { return done_.load(std::memory_order_acquire); }
  // The writer's thread or one of its sealing threads.
  bool on_writer_thread() const;

 private:
  static void* thread_main(void* self);
  void run();
  bool drain_full_chunks();
  // Seals and writes one chunk of slot (kProcessSlot: the process stream); after a write failure
  // the chunk is sealed only to count its events as lost.
  void write_chunk(uint32_t slot, uint32_t tid, const uint8_t* raw, size_t raw_bytes);
  // Returns whether the chunk reached the file; one that did not is counted as lost unless told not to.
  bool write_sealed(uint32_t slot, format::ChunkSealer::Sealed* sealed, bool count_if_lost = true);
  void count_lost_chunk(uint32_t slot, uint64_t events);
  // drain_full_chunks() with SIGMATRACE_WRITER_THREADS > 1: sealed on the pipeline's threads.
  bool drain_full_chunks_in_parallel();
  void flush_process_stream();
  void final_flush(format::ExitReason reason);
  void emit_new_thread_infos();
  void emit_thread_progress(uint64_t tsc);
  // What moves while the process works: events written, each live thread's write position,
  // completions polled (hang_watch.h).
  uint64_t progress_signature() const;
  // A hang_dump record when the watch says one is due, written out at once.
  void watch_for_hang(uint64_t now_ms);
  // Thread summary (and aggregate entries) of slot i; returns the events it dropped.
  uint64_t summarise_slot(uint32_t i, uint64_t tsc);
  // Summarises the slots of threads that have exited and puts them on the free list for reuse.
  void retire_exited_threads();
  // Events a live thread has committed to its current, not yet handed over, chunk.
  uint64_t events_in_partial_chunk(uint32_t slot, const uint8_t** base, size_t* bytes);
  bool write_all(const void* a, size_t an, const void* b, size_t bn);
  void fail(int err);
  // The process stream's closing records but the file end: thread names, clock, summaries, write
  // failure. Returns the events dropped in all.
  uint64_t append_final_records(const ClockSample& cs, bool failed);
  // Remembers a chunk that reached the file, so that the final summary can take its room back.
  void remember_written(uint32_t slot, uint64_t offset, uint64_t events, const uint8_t* process_raw, size_t raw_bytes);
  // On a full disk, to make room for the final summary: cuts the last chunk written off the file.
  // A thread's events in it are counted as lost; the process stream's are put back in front of
  // *carried, to be written again with the summary. False when nothing (more) can be given up.
  bool give_up_last_chunk(std::vector<uint8_t>* carried, bool* thread_chunk);

  Runtime* rt_;
  pthread_t thread_{};
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<int> exit_reason_{0};
  bool io_failed_ = false;
  bool failure_logged_ = false;  // the failure is said once, however often writing is retried
  int io_errno_ = 0;
  uint64_t file_bytes_ = 0;  // the file's size after the last whole chunk
  uint32_t seq_ = 0;
  uint64_t chunks_written_ = 0;
  uint64_t thread_chunks_written_ = 0;  // of application and poller threads (progress, for the hang watch)
  uint64_t events_written_ = 0;
  uint64_t malformed_ = 0;
  std::vector<uint32_t> announced_gen_;   // per slot: the occupant whose thread_info was written
  std::vector<uint32_t> summarised_gen_;  // per slot: the occupant whose summary was written
  std::vector<uint32_t> retiring_;
  uint64_t exits_seen_ = 0;
  uint64_t dropped_by_retired_ = 0;
  uint32_t process_slot_ = 0;  // index of the process stream in the per-slot counters
  std::vector<uint64_t> events_per_slot_;  // written to the file
  std::vector<uint64_t> chunks_lost_per_slot_, events_lost_per_slot_;  // after a write failure
  uint64_t chunks_lost_ = 0, events_lost_ = 0;                          // the same, all slots, ever
  format::ChunkSealer sealer_;
  SealPipeline pipeline_;
  HangWatch hang_;
  bool parallel_ = false;
  std::vector<uint8_t> process_raw_, file_end_raw_;
  // The last chunks written, newest last: what the final summary may take back on a full disk.
  // A chunk of a thread already summarised cannot be (its summary says it was written), so the
  // list is cleared whenever a thread is retired.
  struct WrittenChunk {
    uint64_t offset = 0, events = 0;
    uint32_t slot = 0;
    std::vector<uint8_t> process_raw;  // the unsealed events, for a process-stream chunk
  };
  static constexpr size_t kRevocableChunks = 16;
  std::vector<WrittenChunk> revocable_;
  size_t revocable_used_ = 0;
  std::vector<uint8_t> carried_;  // process-stream records given back, written with the summary
};

}  // namespace sigmatrace::profiler
