// The fixed pool of chunk buffers a process records into, allocated (and pre-faulted) once at
// start-up. Chunks move free -> owned by a thread -> full queue -> writer -> free, through two
// lock-free structures, so an application thread never blocks or allocates to get a new chunk.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler {

constexpr uint32_t kNoChunk = 0xffffffffu;

struct ChunkMeta {
  uint32_t tid = 0;
  uint32_t slot = 0;
  uint32_t used_bytes = 0;  // set by the owner when it hands the chunk to the writer
};

class ChunkPool {
 public:
  bool init(size_t chunk_bytes, uint32_t chunk_count);  // false when memory cannot be had
  uint8_t* data(uint32_t i) const { return base_ + static_cast<size_t>(i) * chunk_bytes_; }
  size_t chunk_bytes() const { return chunk_bytes_; }
  uint32_t count() const { return count_; }
  ChunkMeta& meta(uint32_t i) { return meta_[i]; }

  uint32_t pop_free();             // kNoChunk when empty
  void push_free(uint32_t i);
  void push_full(uint32_t i);      // never fails: the queue holds every chunk of the pool
  uint32_t pop_full();             // single consumer (the writer); kNoChunk when empty
  uint32_t free_count_estimate() const;

 private:
  struct alignas(64) Cell {
    std::atomic<uint64_t> seq;
    uint32_t value;
  };
  uint8_t* base_ = nullptr;
  size_t chunk_bytes_ = 0;
  uint32_t count_ = 0;
  ChunkMeta* meta_ = nullptr;
  // Treiber stack of free chunks; the head carries an ABA tag in its upper 32 bits.
  alignas(64) std::atomic<uint64_t> free_head_{0};
  std::atomic<uint32_t>* free_next_ = nullptr;
  alignas(64) std::atomic<uint32_t> free_count_{0};
  // Bounded MPMC ring (sequence-numbered cells) of full chunks.
  Cell* cells_ = nullptr;
  uint64_t mask_ = 0;
  alignas(64) std::atomic<uint64_t> enqueue_pos_{0};
  alignas(64) std::atomic<uint64_t> dequeue_pos_{0};
};

}  // namespace sigmatrace::profiler
