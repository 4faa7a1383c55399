// See devx_cuda.hpp. Driver entry points are resolved once; per-context state (stream + pinned
// staging buffer) is created lazily by the engine thread, the only thread that copies.
#include "devx_cuda.hpp"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace softnic::devx {
namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct Api {
  CUresult (*get_attr)(void*, int, CUdeviceptr) = nullptr;
  CUresult (*set_ctx)(void*) = nullptr;
  CUresult (*stream_create)(void**, unsigned) = nullptr;
  CUresult (*stream_destroy)(void*) = nullptr;
  CUresult (*stream_sync)(void*) = nullptr;
  CUresult (*dtoh_async)(void*, CUdeviceptr, size_t, void*) = nullptr;
  CUresult (*htod_async)(CUdeviceptr, const void*, size_t, void*) = nullptr;
  CUresult (*host_alloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*host_free)(void*) = nullptr;
  bool ok = false;
};

const Api& api() {
  static Api a = [] {
    Api r;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return r;
    auto sym = [h](const char* n) { return dlsym(h, n); };
    r.get_attr = reinterpret_cast<decltype(r.get_attr)>(sym("cuPointerGetAttribute"));
    r.set_ctx = reinterpret_cast<decltype(r.set_ctx)>(sym("cuCtxSetCurrent"));
    r.stream_create = reinterpret_cast<decltype(r.stream_create)>(sym("cuStreamCreate"));
    r.stream_destroy = reinterpret_cast<decltype(r.stream_destroy)>(sym("cuStreamDestroy_v2"));
    r.stream_sync = reinterpret_cast<decltype(r.stream_sync)>(sym("cuStreamSynchronize"));
    r.dtoh_async = reinterpret_cast<decltype(r.dtoh_async)>(sym("cuMemcpyDtoHAsync_v2"));
    r.htod_async = reinterpret_cast<decltype(r.htod_async)>(sym("cuMemcpyHtoDAsync_v2"));
    r.host_alloc = reinterpret_cast<decltype(r.host_alloc)>(sym("cuMemHostAlloc"));
    r.host_free = reinterpret_cast<decltype(r.host_free)>(sym("cuMemFreeHost"));
    r.ok = r.get_attr && r.set_ctx && r.stream_create && r.stream_sync && r.dtoh_async &&
           r.htod_async;
    return r;
  }();
  return a;
}

constexpr int kAttrContext = 1;
constexpr int kAttrMemoryType = 2;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kStreamNonBlocking = 1;
constexpr size_t kStagingBytes = 1 << 20;

struct PerCtx {
  void* ctx;
  void* stream = nullptr;
  void* staging = nullptr;  // pinned when cuMemHostAlloc is available
  bool pinned = false;
};
std::mutex g_mu;
std::vector<PerCtx> g_ctxs;

PerCtx* per_ctx(void* ctx) {
  for (auto& p : g_ctxs)
    if (p.ctx == ctx) return &p;
  const Api& a = api();
  PerCtx p{ctx};
  if (a.set_ctx(ctx) != 0) return nullptr;
  if (a.stream_create(&p.stream, kStreamNonBlocking) != 0) return nullptr;
  if (a.host_alloc && a.host_alloc(&p.staging, kStagingBytes, 0) == 0) {
    p.pinned = true;
  } else {
    p.staging = ::operator new(kStagingBytes);
  }
  g_ctxs.push_back(p);
  return &g_ctxs.back();
}

}  // namespace

bool cuda_is_device_pointer(const void* p, void** ctx) {
  const Api& a = api();
  if (!a.ok) return false;
  unsigned type = 0;
  if (a.get_attr(&type, kAttrMemoryType, reinterpret_cast<CUdeviceptr>(p)) != 0) return false;
  if (type != kMemoryTypeDevice) return false;
  *ctx = nullptr;
  a.get_attr(ctx, kAttrContext, reinterpret_cast<CUdeviceptr>(p));
  return true;
}

bool cuda_read(void* ctx, void* dst, uint64_t src, size_t len) {
  const Api& a = api();
  std::lock_guard<std::mutex> g(g_mu);
  PerCtx* p = per_ctx(ctx);
  if (!p) return false;
  a.set_ctx(ctx);
  while (len) {
    size_t n = len < kStagingBytes ? len : kStagingBytes;
    if (a.dtoh_async(p->staging, src, n, p->stream) != 0 || a.stream_sync(p->stream) != 0)
      return false;
    memcpy(dst, p->staging, n);
    dst = static_cast<char*>(dst) + n;
    src += n;
    len -= n;
  }
  return true;
}

bool cuda_write(void* ctx, uint64_t dst, const void* src, size_t len) {
  const Api& a = api();
  std::lock_guard<std::mutex> g(g_mu);
  PerCtx* p = per_ctx(ctx);
  if (!p) return false;
  a.set_ctx(ctx);
  while (len) {
    size_t n = len < kStagingBytes ? len : kStagingBytes;
    memcpy(p->staging, src, n);
    if (a.htod_async(dst, p->staging, n, p->stream) != 0 || a.stream_sync(p->stream) != 0)
      return false;
    src = static_cast<const char*>(src) + n;
    dst += n;
    len -= n;
  }
  return true;
}

void cuda_release() {
  const Api& a = api();
  std::lock_guard<std::mutex> g(g_mu);
  for (auto& p : g_ctxs) {
    a.set_ctx(p.ctx);
    if (p.stream && a.stream_destroy) a.stream_destroy(p.stream);
    if (p.pinned && a.host_free) a.host_free(p.staging);
    else ::operator delete(p.staging);
  }
  g_ctxs.clear();
}

}  // namespace softnic::devx
