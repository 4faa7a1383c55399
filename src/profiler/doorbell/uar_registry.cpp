#include "profiler/doorbell/uar_registry.h"

#include <mutex>

namespace sigmatrace::profiler::doorbell {

namespace {
// Stacks allocate a few UARs per context and GPU (NCCL: one per QP group; NVSHMEM: one per
// device); past this many the extra pages are simply not hijack candidates.
constexpr size_t kMaxUars = 1024;
std::mutex g_mutex;
UarPage g_pages[kMaxUars];
size_t g_count = 0;
}  // namespace

void add_uar(const UarPage& page) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_count < kMaxUars) g_pages[g_count++] = page;
}

void remove_uar(uintptr_t uar) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_count; ++i)
    if (g_pages[i].uar == uar) {
      g_pages[i] = g_pages[--g_count];
      return;
    }
}

bool find_uar(uintptr_t addr, size_t len, UarPage* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_count; ++i) {
    const UarPage& p = g_pages[i];
    if (addr >= p.base && addr - p.base < kUarMappingBytes && len <= kUarMappingBytes - (addr - p.base)) {
      *out = p;
      return true;
    }
  }
  return false;
}

}  // namespace sigmatrace::profiler::doorbell
