// See chunk_pool.h. Memory comes from mmap with MAP_POPULATE so that recording into a fresh chunk
// never takes a page fault on an application thread.
#include "profiler/runtime/chunk_pool.h"

#include <sys/mman.h>

#include <new>

namespace sigmatrace::profiler {

namespace {
void* map_populated(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
}  // namespace

bool ChunkPool::init(size_t chunk_bytes, uint32_t chunk_count) {
  chunk_bytes_ = chunk_bytes;
  count_ = chunk_count;
  base_ = static_cast<uint8_t*>(map_populated(chunk_bytes * chunk_count));
  uint64_t ring = 1;
  while (ring < chunk_count) ring <<= 1;
  mask_ = ring - 1;
  void* meta = map_populated(sizeof(ChunkMeta) * chunk_count);
  void* next = map_populated(sizeof(std::atomic<uint32_t>) * chunk_count);
  void* cells = map_populated(sizeof(Cell) * ring);
  if (!base_ || !meta || !next || !cells) return false;
  meta_ = new (meta) ChunkMeta[chunk_count];
  free_next_ = new (next) std::atomic<uint32_t>[chunk_count];
  cells_ = new (cells) Cell[ring];
  for (uint64_t i = 0; i < ring; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  for (uint32_t i = chunk_count; i-- > 0;) push_free(i);
  return true;
}

uint32_t ChunkPool::pop_free() {
  uint64_t head = free_head_.load(std::memory_order_acquire);
  for (;;) {
    uint32_t idx1 = static_cast<uint32_t>(head);  // index + 1; 0 = empty
    if (idx1 == 0) return kNoChunk;
    uint32_t next1 = free_next_[idx1 - 1].load(std::memory_order_relaxed);
    uint64_t desired = ((head >> 32) + 1) << 32 | next1;
    if (free_head_.compare_exchange_weak(head, desired, std::memory_order_acq_rel, std::memory_order_acquire)) {
      free_count_.fetch_sub(1, std::memory_order_relaxed);
      return idx1 - 1;
    }
  }
}

void ChunkPool::push_free(uint32_t i) {
  uint64_t head = free_head_.load(std::memory_order_relaxed);
  for (;;) {
    free_next_[i].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    uint64_t desired = ((head >> 32) + 1) << 32 | (i + 1);
    if (free_head_.compare_exchange_weak(head, desired, std::memory_order_release, std::memory_order_relaxed)) break;
  }
  free_count_.fetch_add(1, std::memory_order_relaxed);
}

uint32_t ChunkPool::free_count_estimate() const { return free_count_.load(std::memory_order_relaxed); }

void ChunkPool::push_full(uint32_t i) {
  uint64_t pos = enqueue_pos_.load(std::memory_order_relaxed);
  for (;;) {
    Cell& c = cells_[pos & mask_];
    uint64_t seq = c.seq.load(std::memory_order_acquire);
    int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
    if (diff == 0) {
      if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        c.value = i;
        c.seq.store(pos + 1, std::memory_order_release);
        return;
      }
    } else {
      pos = enqueue_pos_.load(std::memory_order_relaxed);  // another producer moved on (cannot be full)
    }
  }
}

uint32_t ChunkPool::pop_full() {
  uint64_t pos = dequeue_pos_.load(std::memory_order_relaxed);
  Cell& c = cells_[pos & mask_];
  uint64_t seq = c.seq.load(std::memory_order_acquire);
  if (static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1) < 0) return kNoChunk;
  dequeue_pos_.store(pos + 1, std::memory_order_relaxed);
  uint32_t v = c.value;
  c.seq.store(pos + mask_ + 1, std::memory_order_release);
  return v;
}

}  // namespace sigmatrace::profiler
