// Memory region table and host/GPU copy helpers (see memory_registry.hpp). GPU memory is
// reached through cuda_driver.hpp, so softnic has no build- or link-time CUDA dependency.
#include "core/memory_registry.hpp"

#include "core/cuda_driver.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

namespace softnic {

namespace {
// Keys are (index << 8) | tag: the tag changes on reuse so stale keys do not match.
constexpr uint32_t kMaxMrs = 1u << 20;
std::mutex g_mr_mu;
std::vector<Mr*> g_table(1, nullptr);  // index 0 reserved: key 0 is never valid
std::vector<uint32_t> g_free;
std::vector<uint8_t> g_tag(1, 0);

}  // namespace

uint32_t mr_register(Mr* mr) {
  std::lock_guard<std::mutex> g(g_mr_mu);
  uint32_t idx;
  if (!g_free.empty()) {
    idx = g_free.back();
    g_free.pop_back();
  } else {
    if (g_table.size() >= kMaxMrs) return 0;
    idx = uint32_t(g_table.size());
    g_table.push_back(nullptr);
    g_tag.push_back(0);
  }
  g_tag[idx] = uint8_t(g_tag[idx] + 1);
  g_table[idx] = mr;
  return (idx << 8) | g_tag[idx];
}

void mr_unregister(Mr* mr) {
  std::lock_guard<std::mutex> g(g_mr_mu);
  uint32_t idx = mr->mr.lkey >> 8;
  if (idx < g_table.size() && g_table[idx] == mr) {
    g_table[idx] = nullptr;
    g_free.push_back(idx);
  }
}

Mr* mr_lookup(uint32_t key) {
  // Lookups happen under the engine lock; registration changes also take g_mr_mu.
  std::lock_guard<std::mutex> g(g_mr_mu);
  uint32_t idx = key >> 8;
  if (idx == 0 || idx >= g_table.size()) return nullptr;
  Mr* m = g_table[idx];
  if (!m || m->mr.lkey != key) return nullptr;
  return m;
}

bool mem_write(const Mr* mr, uint64_t addr, const void* src, size_t len) {
  if (!mr->on_gpu) {
    memcpy(reinterpret_cast<void*>(addr), src, len);
    return true;
  }
  return cuda::write(mr->cu_ctx, addr, src, len, false);
}

bool mem_read(const Mr* mr, uint64_t addr, void* dst, size_t len) {
  if (!mr->on_gpu) {
    memcpy(dst, reinterpret_cast<const void*>(addr), len);
    return true;
  }
  return cuda::read(mr->cu_ctx, dst, addr, len);
}

}  // namespace softnic
