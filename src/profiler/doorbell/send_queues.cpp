#include "profiler/doorbell/send_queues.h"

#include <mutex>

namespace sigmatrace::profiler::doorbell {

namespace {

constexpr uint32_t kMaxSendQueues = 4096;

// An entry's generation is odd while it holds a live queue; every add and remove bumps it, so a
// reference taken before either no longer matches.
struct Entry {
  std::atomic<uint32_t> generation{0};
  SendQueue sq;
};

std::mutex g_mutex;
Entry g_entries[kMaxSendQueues];
std::atomic<uint64_t> g_version{0};

bool live(uint32_t generation) { return generation & 1; }

}  // namespace

void add_send_queue(const SendQueue& sq) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g) && e.sq.qpn == sq.qpn && e.sq.device_context == sq.device_context)
      e.generation.store(g + 1, std::memory_order_release);  // a QPN the device reused
  }
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g)) continue;
    e.sq = sq;
    e.generation.store(g + 1, std::memory_order_release);
    g_version.fetch_add(1, std::memory_order_release);
    return;
  }
  // More live QPs than entries: the newest are not recovered (their doorbells say so: unread).
}

void remove_send_queue(uintptr_t device_context, uint32_t qpn) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Entry& e : g_entries) {
    uint32_t g = e.generation.load(std::memory_order_relaxed);
    if (live(g) && e.sq.qpn == qpn && e.sq.device_context == device_context) e.generation.store(g + 1, std::memory_order_release);
  }
  g_version.fetch_add(1, std::memory_order_release);
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
