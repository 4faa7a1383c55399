// See cuda_driver.hpp. Entry points are resolved once; streams and staging buffers are made per
// thread and context on first use.
#include "cuda_driver.hpp"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace softnic::cuda {
namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct Api {
  CUresult (*get_attr)(void*, int, CUdeviceptr) = nullptr;
  CUresult (*push_ctx)(void*) = nullptr;
  CUresult (*pop_ctx)(void**) = nullptr;
  CUresult (*stream_create)(void**, unsigned) = nullptr;
  CUresult (*stream_destroy)(void*) = nullptr;
  CUresult (*stream_sync)(void*) = nullptr;
  CUresult (*dtoh_async)(void*, CUdeviceptr, size_t, void*) = nullptr;
  CUresult (*htod_async)(CUdeviceptr, const void*, size_t, void*) = nullptr;
  CUresult (*host_alloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*host_free)(void*) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  bool ok = false;
};

const Api& api() {
  static const Api a = [] {
    Api r;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return r;
    auto sym = [h](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      return fn != nullptr;
    };
    r.ok = sym(r.get_attr, "cuPointerGetAttribute") & sym(r.push_ctx, "cuCtxPushCurrent_v2") &
           sym(r.pop_ctx, "cuCtxPopCurrent_v2") & sym(r.stream_create, "cuStreamCreate") &
           sym(r.stream_destroy, "cuStreamDestroy_v2") & sym(r.stream_sync, "cuStreamSynchronize") &
           sym(r.dtoh_async, "cuMemcpyDtoHAsync_v2") & sym(r.htod_async, "cuMemcpyHtoDAsync_v2") &
           sym(r.host_alloc, "cuMemHostAlloc") & sym(r.host_free, "cuMemFreeHost") &
           sym(r.error_name, "cuGetErrorName");
    if (!r.ok) fprintf(stderr, "softnic: libcuda.so.1 lacks a driver entry point softnic needs: GPU memory is not usable\n");
    return r;
  }();
  return a;
}

constexpr int kAttrContext = 1;
constexpr int kAttrMemoryType = 2;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kStreamNonBlocking = 1;
constexpr size_t kStagingBytes = 1 << 20;
constexpr int kMaxContextsPerThread = 8;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool check(CUresult r, const char* call, uint64_t dev, size_t len);

// Pinned staging: [0, kStagingBytes) for synchronous copies, then a ring of small slots for
// write_async (the stream is synchronised before a slot is reused).
constexpr size_t kAsyncSlots = 64;
struct PerCtx {
  void* ctx = nullptr;
  void* stream = nullptr;
  uint8_t* staging = nullptr;  // pinned
  uint32_t async_next = 0;     // next ring slot
  uint32_t async_queued = 0;   // async writes since the stream was last synchronised
};
struct ThreadState {
  PerCtx slot[kMaxContextsPerThread];
  int n = 0;
  int inflight = -1;  // this thread's entry in g_inflight
};
thread_local ThreadState t_state;

std::atomic<uint64_t> g_reads{0}, g_writes{0}, g_read_ns{0}, g_write_ns{0}, g_read_max{0},
    g_write_max{0}, g_failures{0};

// One in-flight record per copying thread (dumps list them; a thread keeps its entry).
constexpr int kMaxCopyThreads = 32;
struct InFlightSlot {
  std::atomic<long> tid{0};
  std::atomic<uint64_t> since{0}, addr{0}, len{0};
  std::atomic<bool> is_read{false};
};
InFlightSlot g_inflight[kMaxCopyThreads];

InFlightSlot* my_inflight() {
  ThreadState& t = t_state;
  if (t.inflight < 0) {
    long tid = long(syscall(SYS_gettid));
    for (int i = 0; i < kMaxCopyThreads; ++i) {
      long expect = 0;
      if (g_inflight[i].tid.compare_exchange_strong(expect, tid)) {
        t.inflight = i;
        break;
      }
    }
    if (t.inflight < 0) return nullptr;  // more copying threads than slots: not shown in dumps
  }
  return &g_inflight[t.inflight];
}

// Runs before CUDA can be initialised by the program (softnic's libibverbs is loaded with it).
__attribute__((constructor)) void reserve_work_queues() {
  const char* want = getenv("SOFTNIC_CUDA_CONNECTIONS");
  if (want && strcmp(want, "0") == 0) return;
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", want && *want ? want : "4", 0);
}

void raise_max(std::atomic<uint64_t>& m, uint64_t v) {
  uint64_t cur = m.load(std::memory_order_relaxed);
  while (v > cur && !m.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

bool check(CUresult r, const char* call, uint64_t dev, size_t len) {
  if (r == 0) return true;
  const char* name = nullptr;
  if (api().error_name) api().error_name(r, &name);
  g_failures.fetch_add(1, std::memory_order_relaxed);
  fprintf(stderr, "softnic: %s (GPU address 0x%llx, %zu bytes) failed: %s (%d)\n", call,
          (unsigned long long)dev, len, name ? name : "unknown CUresult", r);
  return false;
}

// The calling thread's stream and staging buffer for ctx; the context must be current.
PerCtx* per_ctx(void* ctx) {
  ThreadState& t = t_state;
  for (int i = 0; i < t.n; ++i)
    if (t.slot[i].ctx == ctx) return &t.slot[i];
  if (t.n == kMaxContextsPerThread) {
    fprintf(stderr, "softnic: a thread copies for more than %d CUDA contexts\n", kMaxContextsPerThread);
    return nullptr;
  }
  const Api& a = api();
  PerCtx p;
  p.ctx = ctx;
  if (!check(a.stream_create(&p.stream, kStreamNonBlocking), "cuStreamCreate", 0, 0)) return nullptr;
  size_t bytes = kStagingBytes + kAsyncSlots * kAsyncWriteMaxBytes;
  if (!check(a.host_alloc(reinterpret_cast<void**>(&p.staging), bytes, 0), "cuMemHostAlloc(staging)", 0, bytes)) {
    a.stream_destroy(p.stream);
    return nullptr;
  }
  t.slot[t.n] = p;
  return &t.slot[t.n++];
}

// Runs one copy with ctx pushed (the thread's own current context, an application's among
// them, is restored afterwards) and the in-flight record and statistics kept.
template <bool kRead>
bool copy(void* ctx, uint64_t dev, void* host, size_t len) {
  const Api& a = api();
  if (!a.ok) return false;
  uint64_t t0 = now_ns();
  InFlightSlot* rec = my_inflight();
  if (rec) {
    rec->addr.store(dev, std::memory_order_relaxed);
    rec->len.store(len, std::memory_order_relaxed);
    rec->is_read.store(kRead, std::memory_order_relaxed);
    rec->since.store(t0, std::memory_order_release);
  }
  bool ok = check(a.push_ctx(ctx), "cuCtxPushCurrent", dev, len);
  if (ok) {
    PerCtx* p = per_ctx(ctx);
    ok = p != nullptr;
    uint8_t* h = static_cast<uint8_t*>(host);
    for (size_t done = 0; ok && done < len;) {
      size_t n = len - done < kStagingBytes ? len - done : kStagingBytes;
      if (kRead) {
        ok = check(a.dtoh_async(p->staging, dev + done, n, p->stream), "cuMemcpyDtoHAsync", dev + done, n) &&
             check(a.stream_sync(p->stream), "cuStreamSynchronize(after a read)", dev + done, n);
        if (ok) memcpy(h + done, p->staging, n);
      } else {
        memcpy(p->staging, h + done, n);
        ok = check(a.htod_async(dev + done, p->staging, n, p->stream), "cuMemcpyHtoDAsync", dev + done, n) &&
             check(a.stream_sync(p->stream), "cuStreamSynchronize(after a write)", dev + done, n);
      }
      done += n;
    }
    if (ok) p->async_queued = 0;  // the synchronisation also finished every queued async write
    void* prev = nullptr;
    check(a.pop_ctx(&prev), "cuCtxPopCurrent", dev, len);
  }
  if (rec) rec->since.store(0, std::memory_order_release);
  uint64_t dt = now_ns() - t0;
  (kRead ? g_reads : g_writes).fetch_add(1, std::memory_order_relaxed);
  (kRead ? g_read_ns : g_write_ns).fetch_add(dt, std::memory_order_relaxed);
  raise_max(kRead ? g_read_max : g_write_max, dt);
  return ok;
}

}  // namespace

bool is_device_pointer(const void* p, void** ctx) {
  const Api& a = api();
  if (!a.ok) return false;
  unsigned type = 0;
  // Not CUDA memory (or no context yet): the driver answers an error, and it is host memory.
  if (a.get_attr(&type, kAttrMemoryType, reinterpret_cast<CUdeviceptr>(p)) != 0) return false;
  if (type != kMemoryTypeDevice) return false;
  *ctx = nullptr;
  return check(a.get_attr(ctx, kAttrContext, reinterpret_cast<CUdeviceptr>(p)),
               "cuPointerGetAttribute(CONTEXT)", reinterpret_cast<uint64_t>(p), 0);
}

bool read(void* ctx, void* dst, uint64_t src_dev, size_t len) {
  return copy<true>(ctx, src_dev, dst, len);
}

bool write(void* ctx, uint64_t dst_dev, const void* src, size_t len) {
  return copy<false>(ctx, dst_dev, const_cast<void*>(src), len);
}

bool write_async(void* ctx, uint64_t dst_dev, const void* src, size_t len) {
  const Api& a = api();
  if (!a.ok) return false;
  if (len > kAsyncWriteMaxBytes) return write(ctx, dst_dev, src, len);
  uint64_t t0 = now_ns();
  if (!check(a.push_ctx(ctx), "cuCtxPushCurrent", dst_dev, len)) return false;
  PerCtx* p = per_ctx(ctx);
  bool ok = p != nullptr;
  // A full ring: wait for the queued writes before a slot is reused.
  if (ok && p->async_queued == kAsyncSlots) {
    ok = check(a.stream_sync(p->stream), "cuStreamSynchronize(async writes)", dst_dev, len);
    if (ok) p->async_queued = 0;
  }
  if (ok) {
    uint8_t* slot = p->staging + kStagingBytes + size_t(p->async_next) * kAsyncWriteMaxBytes;
    memcpy(slot, src, len);
    ok = check(a.htod_async(dst_dev, slot, len, p->stream), "cuMemcpyHtoDAsync", dst_dev, len);
    if (ok) {
      p->async_next = uint32_t((p->async_next + 1) % kAsyncSlots);
      p->async_queued++;
    }
  }
  void* prev = nullptr;
  check(a.pop_ctx(&prev), "cuCtxPopCurrent", dst_dev, len);
  uint64_t dt = now_ns() - t0;
  g_writes.fetch_add(1, std::memory_order_relaxed);
  g_write_ns.fetch_add(dt, std::memory_order_relaxed);
  raise_max(g_write_max, dt);
  return ok;
}

void release_thread() {
  const Api& a = api();
  ThreadState& t = t_state;
  for (int i = 0; i < t.n; ++i) {
    PerCtx& p = t.slot[i];
    if (a.push_ctx(p.ctx) != 0) continue;  // the context is gone, and its resources with it
    a.stream_sync(p.stream);                // queued async writes still read the staging
    a.stream_destroy(p.stream);
    a.host_free(p.staging);
    void* prev = nullptr;
    a.pop_ctx(&prev);
  }
  t.n = 0;
  if (t.inflight >= 0) g_inflight[t.inflight].tid.store(0);
  t.inflight = -1;
}

CopyStats copy_stats() {
  return CopyStats{g_reads.load(), g_writes.load(), g_read_ns.load(), g_write_ns.load(),
                   g_read_max.load(), g_write_max.load(), g_failures.load()};
}

int copies_in_flight(InFlight* out, int max) {
  int n = 0;
  for (int i = 0; i < kMaxCopyThreads && n < max; ++i) {
    uint64_t since = g_inflight[i].since.load(std::memory_order_acquire);
    if (!since) continue;
    out[n++] = InFlight{g_inflight[i].tid.load(), since, g_inflight[i].addr.load(),
                        g_inflight[i].len.load(), g_inflight[i].is_read.load()};
  }
  return n;
}

}  // namespace softnic::cuda
