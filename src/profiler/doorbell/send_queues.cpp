#include "profiler/doorbell/send_queues.h"

#include <mutex>

#include "profiler/doorbell/wqe_recovery.h"
#include "profiler/gpu/device_copy.h"

namespace sigmatrace::profiler::doorbell {

namespace {

constexpr uint32_t kMaxSendQueues = 4096;

// An entry's generation is odd while it holds a live queue; every add and remove bumps it, so a
// reference taken before either no longer matches.
struct Entry {
  std::atomic<uint32_t> generation{0};
  SendQueue sq;
  void* staging = nullptr;  // pinned, for its WQE recovery; until a poller takes it
  size_t staging_bytes = 0;
  uintptr_t staging_context = 0;  // the CUDA context it was allocated in
};

std::mutex g_mutex;
Entry g_entries[kMaxSendQueues];
std::atomic<uint64_t> g_version{0};

// Staging no queue holds now, kept for the next queue of its size (pinned memory is costly to
// allocate, and the allocation may synchronize with running kernels). Under g_mutex.
constexpr int kMaxPooled = 256;
struct Pooled {
  void* p;
  size_t bytes;
  uintptr_t context;
};
Pooled g_pool[kMaxPooled];
int g_pooled = 0;

bool live(uint32_t generation) { return generation & 1; }

void* pool_take(size_t bytes, uintptr_t context) {
  for (int i = 0; i < g_pooled; ++i)
    if (g_pool[i].bytes == bytes && g_pool[i].context == context) {
      void* p = g_pool[i].p;
      g_pool[i] = g_pool[--g_pooled];
      return p;
    }
  return nullptr;
}
// False: the pool is full (the caller frees it).
bool pool_put(void* p, size_t bytes, uintptr_t context) {
  if (!p) return true;
  if (g_pooled == kMaxPooled) return false;
  g_pool[g_pooled++] = Pooled{p, bytes, context};
  return true;
}
void release_entry_staging(Entry& e) {
  if (e.staging && !pool_put(e.staging, e.staging_bytes, e.staging_context)) cuda::free_pinned(e.staging);
  e.staging = nullptr;
}

}  // namespace

void add_send_queue(const SendQueue& sq) {
  const size_t bytes = staging_bytes_for(sq);
  void* staging = nullptr;
  const uintptr_t context = bytes ? cuda::current_context() : 0;  // where cuMemAllocHost puts it
  if (bytes) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      staging = pool_take(bytes, context);
    }
    // Outside the lock: a poller looking a queue up must not wait for the driver.
    if (!staging) staging = cuda::alloc_pinned(bytes);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g) && e.sq.qpn == sq.qpn && e.sq.device_context == sq.device_context) {
      e.generation.store(g + 1, std::memory_order_release);  // a QPN the device reused
      release_entry_staging(e);
    }
  }
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g)) continue;
    e.sq = sq;
    e.staging = staging;
    e.staging_bytes = staging ? bytes : 0;
    e.staging_context = context;
    e.generation.store(g + 1, std::memory_order_release);
    g_version.fetch_add(1, std::memory_order_release);
    return;
  }
  // More live QPs than entries: the newest are not recovered (their doorbells say so: unread).
  if (staging && !pool_put(staging, bytes, context)) cuda::free_pinned(staging);
}

void remove_send_queue(uintptr_t device_context, uint32_t qpn) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g) && e.sq.qpn == qpn && e.sq.device_context == device_context) {
      e.generation.store(g + 1, std::memory_order_release);
      release_entry_staging(e);
    }
  }
  g_version.fetch_add(1, std::memory_order_release);
}

uint32_t forget_queues_of_context(uintptr_t cu_context, bool alive) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < g_pooled;)
    if (g_pool[i].context == cu_context) {
      if (alive) cuda::free_pinned(g_pool[i].p);
      g_pool[i] = g_pool[--g_pooled];
    } else {
      ++i;
    }
  uint32_t n = 0;
  for (Entry& e : g_entries) {
    if (e.staging && e.staging_context == cu_context) {
      if (alive) cuda::free_pinned(e.staging);
      e.staging = nullptr;
    }
    if (!live(e.generation.load(std::memory_order_relaxed))) continue;
    if (e.sq.memory == format::SqMemory::gpu && e.sq.cu_context == cu_context) e.sq.memory = format::SqMemory::unknown, ++n;
    if (e.sq.dbr_memory == format::SqMemory::gpu && e.sq.dbr_cu_context == cu_context) e.sq.dbr_memory = format::SqMemory::unknown;
  }
  g_version.fetch_add(1, std::memory_order_release);
  return n;
}

void* take_staging(const SendQueueRef& ref, size_t bytes, uintptr_t* context) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (ref.entry >= kMaxSendQueues) return nullptr;
  Entry& e = g_entries[ref.entry];
  if (e.generation.load(std::memory_order_relaxed) != ref.generation || e.staging_bytes != bytes) return nullptr;
  void* p = e.staging;
  *context = e.staging_context;
  e.staging = nullptr;
  return p;
}

void give_back_staging(void* staging, size_t bytes, uintptr_t context) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!pool_put(staging, bytes, context)) cuda::free_pinned(staging);  // the pool is full: rare
}

bool find_send_queue(uintptr_t device_context, uint32_t qpn, SendQueue* out, SendQueueRef* ref) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (uint32_t i = 0; i < kMaxSendQueues; ++i) {
    uint32_t g = g_entries[i].generation.load(std::memory_order_acquire);
    if (live(g) && g_entries[i].sq.qpn == qpn && g_entries[i].sq.device_context == device_context) {
      *out = g_entries[i].sq;
      *ref = SendQueueRef{i, g};
      return true;
    }
  }
  return false;
}

uint64_t send_queues_version() { return g_version.load(std::memory_order_acquire); }

int send_queues_on_uar(uintptr_t device_context, uint32_t uar_page, SendQueue* out, int max) {
  std::lock_guard<std::mutex> lock(g_mutex);
  int n = 0;
  for (uint32_t i = 0; i < kMaxSendQueues && n < max; ++i)
    if (live(g_entries[i].generation.load(std::memory_order_acquire)) && g_entries[i].sq.uar_page == uar_page &&
        g_entries[i].sq.device_context == device_context)
      out[n++] = g_entries[i].sq;
  return n;
}

bool still_current(const SendQueueRef& ref) {
  return ref.entry < kMaxSendQueues && g_entries[ref.entry].generation.load(std::memory_order_acquire) == ref.generation;
}

}  // namespace sigmatrace::profiler::doorbell
