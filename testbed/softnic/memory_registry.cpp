// Memory region table and host/GPU copy helpers (see memory_registry.hpp). The CUDA driver
// is reached only through dlopen so softnic has no build- or link-time CUDA dependency.
#include "memory_registry.hpp"

#include <dlfcn.h>

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

struct CudaApi {
  using PtrAttr = int (*)(void*, int, unsigned long long);
  using Copy = int (*)(unsigned long long, const void*, size_t);
  using CopyD2H = int (*)(void*, unsigned long long, size_t);
  using SetCtx = int (*)(void*);
  PtrAttr get_attr = nullptr;
  Copy htod = nullptr;
  CopyD2H dtoh = nullptr;
  SetCtx set_ctx = nullptr;
  bool ok = false;
};

const CudaApi& cuda() {
  static CudaApi api = [] {
    CudaApi a;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return a;
    a.get_attr = reinterpret_cast<CudaApi::PtrAttr>(dlsym(h, "cuPointerGetAttribute"));
    a.htod = reinterpret_cast<CudaApi::Copy>(dlsym(h, "cuMemcpyHtoD_v2"));
    a.dtoh = reinterpret_cast<CudaApi::CopyD2H>(dlsym(h, "cuMemcpyDtoH_v2"));
    a.set_ctx = reinterpret_cast<CudaApi::SetCtx>(dlsym(h, "cuCtxSetCurrent"));
    a.ok = a.get_attr && a.htod && a.dtoh && a.set_ctx;
    return a;
  }();
  return api;
}

constexpr int kCuPointerAttributeContext = 1;
constexpr int kCuPointerAttributeMemoryType = 2;
constexpr unsigned kCuMemoryTypeDevice = 2;
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

bool cuda_pointer_is_device(const void* p, void** cu_ctx) {
  const CudaApi& a = cuda();
  if (!a.ok) return false;
  unsigned type = 0;
  if (a.get_attr(&type, kCuPointerAttributeMemoryType, reinterpret_cast<unsigned long long>(p)) != 0)
    return false;  // not CUDA memory (or no context): treat as host memory
  if (type != kCuMemoryTypeDevice) return false;
  void* ctx = nullptr;
  a.get_attr(&ctx, kCuPointerAttributeContext, reinterpret_cast<unsigned long long>(p));
  *cu_ctx = ctx;
  return true;
}

void mem_write(const Mr* mr, uint64_t addr, const void* src, size_t len) {
  if (!mr->on_gpu) {
    memcpy(reinterpret_cast<void*>(addr), src, len);
    return;
  }
  const CudaApi& a = cuda();
  a.set_ctx(mr->cu_ctx);
  a.htod(addr, src, len);
}

void mem_read(const Mr* mr, uint64_t addr, void* dst, size_t len) {
  if (!mr->on_gpu) {
    memcpy(dst, reinterpret_cast<const void*>(addr), len);
    return;
  }
  const CudaApi& a = cuda();
  a.set_ctx(mr->cu_ctx);
  a.dtoh(dst, addr, len);
}

}  // namespace softnic
