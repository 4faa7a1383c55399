// See cuda_driver.hpp. Entry points are resolved once; a context's stream and staging buffers
// are made on its first copy.
#include "core/cuda_driver.hpp"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
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
  CUresult (*stream_query)(void*) = nullptr;
  CUresult (*dtoh_async)(void*, CUdeviceptr, size_t, void*) = nullptr;
  CUresult (*htod_async)(CUdeviceptr, const void*, size_t, void*) = nullptr;
  CUresult (*host_alloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*host_free)(void*) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  CUresult (*device_get)(int*, int) = nullptr;
  CUresult (*primary_ctx_retain)(void**, int) = nullptr;
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
           sym(r.stream_destroy, "cuStreamDestroy_v2") & sym(r.stream_query, "cuStreamQuery") &
           sym(r.dtoh_async, "cuMemcpyDtoHAsync_v2") & sym(r.htod_async, "cuMemcpyHtoDAsync_v2") &
           sym(r.host_alloc, "cuMemHostAlloc") & sym(r.host_free, "cuMemFreeHost") &
           sym(r.error_name, "cuGetErrorName");
    // Only for memory of CUDA's virtual memory API (no owning context): optional.
    sym(r.device_get, "cuDeviceGet");
    sym(r.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    if (!r.ok) fprintf(stderr, "softnic: libcuda.so.1 lacks a driver entry point softnic needs: GPU memory is not usable\n");
    return r;
  }();
  return a;
}

constexpr int kAttrContext = 1;
constexpr int kAttrMemoryType = 2;
constexpr int kAttrDeviceOrdinal = 9;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kStreamNonBlocking = 1;
constexpr size_t kStagingBytes = 1 << 20;
constexpr int kMaxContexts = 8;
const char* const kDefaultConnections = "4";

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// softnic's one stream per context with its pinned staging: [0, kStagingBytes) for synchronous
// copies, then kMaxPostedWrites slots of kMaxPostBytes for posted writes (the stream is
// synchronised before a slot is reused). One stream, not one per thread: every stream of a process may need a
// hardware work queue of its own (cuda_driver.hpp), and a single one keeps all of softnic's GPU
// accesses of a context in issue order.
// At most this many posted writes wait on a channel, so that a CQE never waits behind a long
// backlog when the stream drains slowly (ten processes on one GPU). Beyond it a post waits.
constexpr uint32_t kMaxPostedWrites = 16;
constexpr size_t kMaxPostBytes = 256;  // a larger "posted" write is made synchronously
struct Channel {
  void* ctx = nullptr;
  void* stream = nullptr;
  uint8_t* staging = nullptr;  // pinned, kStagingBytes + kMaxPostedWrites * kMaxPostBytes
  uint32_t posted = 0;         // posted writes queued (slots in use) since they last all landed
  std::atomic<uint64_t> posted_since{0};  // first posted write not known to have landed (0: none)
  std::mutex mu;
};
std::mutex g_channels_mu;
Channel g_channels[kMaxContexts];
std::atomic<int> g_channels_n{0};

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
thread_local int t_inflight = -1;

InFlightSlot* my_inflight() {
  if (t_inflight < 0) {
    long tid = long(syscall(SYS_gettid));
    for (int i = 0; i < kMaxCopyThreads; ++i) {
      long expect = 0;
      if (g_inflight[i].tid.compare_exchange_strong(expect, tid)) {
        t_inflight = i;
        break;
      }
    }
    if (t_inflight < 0) return nullptr;  // more copying threads than slots: not shown in dumps
  }
  return &g_inflight[t_inflight];
}

// Runs before CUDA can be initialised by the program (softnic's libibverbs is loaded with it).
__attribute__((constructor)) void reserve_work_queues() {
  const char* want = getenv("SOFTNIC_CUDA_CONNECTIONS");
  if (want && strcmp(want, "0") == 0) return;
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", want && *want ? want : kDefaultConnections, 0);
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

// The channel of ctx, created on first use; ctx must be current.
Channel* channel(void* ctx) {
  int n = g_channels_n.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_channels[i].ctx == ctx) return &g_channels[i];
  std::lock_guard<std::mutex> g(g_channels_mu);
  n = g_channels_n.load();
  for (int i = 0; i < n; ++i)
    if (g_channels[i].ctx == ctx) return &g_channels[i];
  if (n == kMaxContexts) {
    fprintf(stderr, "softnic: GPU memory of more than %d CUDA contexts\n", kMaxContexts);
    return nullptr;
  }
  const Api& a = api();
  Channel& ch = g_channels[n];
  if (!check(a.stream_create(&ch.stream, kStreamNonBlocking), "cuStreamCreate", 0, 0)) return nullptr;
  size_t bytes = kStagingBytes + kMaxPostedWrites * kMaxPostBytes;
  if (!check(a.host_alloc(reinterpret_cast<void**>(&ch.staging), bytes, 0), "cuMemHostAlloc(staging)", 0, bytes)) {
    a.stream_destroy(ch.stream);
    return nullptr;
  }
  ch.ctx = ctx;
  g_channels_n.store(n + 1, std::memory_order_release);
  return &ch;
}

// Everything queued on ch, posted writes included, has landed: their slots are free again.
void mark_landed(Channel* ch) {
  ch->posted = 0;
  ch->posted_since.store(0, std::memory_order_relaxed);
}

// Polls rather than cuStreamSynchronize: that waits the way the application's context was
// told to, and a context made with cudaDeviceScheduleBlockingSync sleeps on an interrupt. On the
// H200 that raised a 64-byte WQE read from 9 to 28 us and a responder write from 8 to 22 us.
bool sync_channel(Channel* ch, uint64_t dev, size_t len) {
  constexpr CUresult kNotReady = 600;  // CUDA_ERROR_NOT_READY
  CUresult r;
  while ((r = api().stream_query(ch->stream)) == kNotReady) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  if (!check(r, "cuStreamQuery", dev, len)) return false;
  mark_landed(ch);
  return true;
}

// Synchronous copy on ch: it has landed (and everything queued on ch before it) on return.
template <bool kRead>
bool copy_on(Channel* ch, uint64_t dev, uint8_t* host, size_t len) {
  const Api& a = api();
  bool ok = true;
  for (size_t done = 0; ok && done < len;) {
    size_t n = len - done < kStagingBytes ? len - done : kStagingBytes;
    if (kRead) {
      ok = check(a.dtoh_async(ch->staging, dev + done, n, ch->stream), "cuMemcpyDtoHAsync", dev + done, n) &&
           sync_channel(ch, dev + done, n);
      if (ok) memcpy(host + done, ch->staging, n);
    } else {
      memcpy(ch->staging, host + done, n);
      ok = check(a.htod_async(dev + done, ch->staging, n, ch->stream), "cuMemcpyHtoDAsync", dev + done, n) &&
           sync_channel(ch, dev + done, n);
    }
    done += n;
  }
  return ok;
}

// Posted write on ch: queued behind ch's earlier copies, not waited for.
bool post_on(Channel* ch, uint64_t dev, const uint8_t* src, size_t len) {
  if (len > kMaxPostBytes) return copy_on<false>(ch, dev, const_cast<uint8_t*>(src), len);
  if (ch->posted == kMaxPostedWrites && !sync_channel(ch, dev, len)) return false;  // every slot waits
  uint8_t* slot = ch->staging + kStagingBytes + size_t(ch->posted) * kMaxPostBytes;
  memcpy(slot, src, len);
  if (!check(api().htod_async(dev, slot, len, ch->stream), "cuMemcpyHtoDAsync(posted)", dev, len)) return false;
  if (!ch->posted++) ch->posted_since.store(now_ns(), std::memory_order_relaxed);
  return true;
}

enum class Kind { kRead, kWrite, kPost };

// Runs one copy on ctx's channel with ctx pushed (the thread's own current context, an
// application's among them, is restored afterwards), keeping the in-flight record and statistics.
bool run_copy(void* ctx, Kind kind, uint64_t dev, uint8_t* host, size_t len) {
  const Api& a = api();
  if (!a.ok) return false;
  uint64_t t0 = now_ns();
  InFlightSlot* rec = my_inflight();
  if (rec) {
    rec->addr.store(dev, std::memory_order_relaxed);
    rec->len.store(len, std::memory_order_relaxed);
    rec->is_read.store(kind == Kind::kRead, std::memory_order_relaxed);
    rec->since.store(t0, std::memory_order_release);
  }
  bool ok = check(a.push_ctx(ctx), "cuCtxPushCurrent", dev, len);
  if (ok) {
    Channel* ch = channel(ctx);
    ok = ch != nullptr;
    if (ok) {
      std::lock_guard<std::mutex> g(ch->mu);
      ok = kind == Kind::kRead    ? copy_on<true>(ch, dev, host, len)
           : kind == Kind::kWrite ? copy_on<false>(ch, dev, host, len)
                                  : post_on(ch, dev, host, len);
    }
    void* prev = nullptr;
    check(a.pop_ctx(&prev), "cuCtxPopCurrent", dev, len);
  }
  if (rec) rec->since.store(0, std::memory_order_release);
  uint64_t dt = now_ns() - t0;
  bool is_read = kind == Kind::kRead;
  (is_read ? g_reads : g_writes).fetch_add(1, std::memory_order_relaxed);
  (is_read ? g_read_ns : g_write_ns).fetch_add(dt, std::memory_order_relaxed);
  raise_max(is_read ? g_read_max : g_write_max, dt);
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
  const auto dev = reinterpret_cast<CUdeviceptr>(p);
  if (!check(a.get_attr(ctx, kAttrContext, dev), "cuPointerGetAttribute(CONTEXT)", dev, 0)) return false;
  if (*ctx) return true;
  // Memory of the virtual memory API (cuMemCreate + cuMemMap: NVSHMEM's heap) belongs to no
  // context; its device's primary context reaches it (kept retained for the process's life).
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static void* primary[kMaxDevices] = {};
  int ordinal = -1, device = 0;
  if (!check(a.get_attr(&ordinal, kAttrDeviceOrdinal, dev), "cuPointerGetAttribute(DEVICE_ORDINAL)", dev, 0)) return false;
  if (ordinal < 0 || ordinal >= kMaxDevices || !a.device_get || !a.primary_ctx_retain) return false;
  std::lock_guard<std::mutex> g(mu);
  if (!primary[ordinal] && !(check(a.device_get(&device, ordinal), "cuDeviceGet", dev, 0) &&
                             check(a.primary_ctx_retain(&primary[ordinal], device), "cuDevicePrimaryCtxRetain", dev, 0)))
    return false;
  *ctx = primary[ordinal];
  return true;
}

bool read(void* ctx, void* dst, uint64_t src_dev, size_t len) {
  return run_copy(ctx, Kind::kRead, src_dev, static_cast<uint8_t*>(dst), len);
}

bool write(void* ctx, uint64_t dst_dev, const void* src, size_t len, bool posted) {
  return run_copy(ctx, posted ? Kind::kPost : Kind::kWrite, dst_dev,
                  static_cast<uint8_t*>(const_cast<void*>(src)), len);
}

uint64_t oldest_unlanded_post_ns() {
  int n = g_channels_n.load(std::memory_order_acquire);
  if (!n) return 0;
  const Api& a = api();
  uint64_t oldest = 0;
  for (int i = 0; i < n; ++i) {
    Channel& ch = g_channels[i];
    uint64_t since = ch.posted_since.load(std::memory_order_relaxed);
    if (!since) continue;
    // The stream may have finished them: ask it, without waiting, when the channel is free.
    std::unique_lock<std::mutex> g(ch.mu, std::try_to_lock);
    if (g.owns_lock() && a.push_ctx(ch.ctx) == 0) {
      if (a.stream_query(ch.stream) == 0) {
        mark_landed(&ch);
        since = 0;
      }
      void* prev = nullptr;
      a.pop_ctx(&prev);
    }
    if (since && (!oldest || since < oldest)) oldest = since;
  }
  return oldest;
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
