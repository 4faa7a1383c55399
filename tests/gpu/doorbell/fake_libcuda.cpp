// A stand-in for libcuda.so.1, for tests only: the CUDA driver entry points the doorbell hijack
// depends on, with the driver's signatures and resolution rules (cuGetProcAddress hands out the
// versioned variants, the per-thread-default-stream forms with flag 2), over host memory. There
// is no GPU here: a "device pointer" of registered host memory is its host address (as the
// driver gives with unified addressing), so CPU threads of the test client can play the GPU
// threads that ring doorbells. Launches run nothing; they only have to reach the driver. A kernel
// launched on a stream of the fake's own "runs" until the test client says it is done
// (fake_cuda_kernel_done): events recorded after it complete then, so the profiler's kernel-end
// markers work as on a GPU.
// Nothing of this is used outside tests/gpu/doorbell.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kInvalidHandle = 400, kNotFound = 500, kAlreadyRegistered = 712, kNotRegistered = 713;

struct CUfunc_st {
  std::string name;
};

namespace {
std::mutex g_mutex;
struct Range {
  uintptr_t base;
  size_t bytes;
};
std::vector<Range> g_registered;
int g_context_dummy;

bool registered(uintptr_t p, Range* out = nullptr) {
  for (const Range& r : g_registered)
    if (p >= r.base && p - r.base < r.bytes) {
      if (out) *out = r;
      return true;
    }
  return false;
}
}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

// Streams and events. A stream counts the kernels launched on it and the ends the client
// reported, with when each ended; an event completes when the kernels launched on its stream
// before it have ended, at the latest of those ends and its recording.
constexpr CUresult kNotReady = 600;  // CUDA_ERROR_NOT_READY
struct CUstream_st {
  uint64_t launched = 0;
  std::vector<uint64_t> start_ns, end_ns;  // the i-th kernel's launch and end
};
struct CUevent_st {
  bool timed = true;  // not created with CU_EVENT_DISABLE_TIMING
  CUstream_st* stream = nullptr;
  uint64_t kernels = 0;  // launched on the stream before it
  uint64_t recorded_ns = 0;
};
namespace {
uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
bool is_own_stream(CUstream_st* s) { return reinterpret_cast<uintptr_t>(s) > 2; }  // not NULL, legacy or per-thread
// When the event completed (0: not yet). Under g_mutex.
uint64_t completed_at(const CUevent_st* e) {
  if (!e->stream || !e->kernels) return e->recorded_ns;
  if (e->stream->end_ns.size() < e->kernels) return 0;
  return std::max(e->recorded_ns, e->stream->end_ns[e->kernels - 1]);
}
}  // namespace
FAKE_EXPORT CUresult cuStreamCreate(CUstream_st** s, unsigned) {
  *s = new CUstream_st;
  return kSuccess;
}
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream_st* s) {
  if (!is_own_stream(s)) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  delete s;
  return kSuccess;
}
FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream_st*, int* status) {
  *status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
  return kSuccess;
}
FAKE_EXPORT CUresult cuEventCreate(CUevent_st** e, unsigned flags) {
  *e = new CUevent_st;
  (*e)->timed = !(flags & 0x2);
  return kSuccess;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent_st* e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  delete e;
  return kSuccess;
}
FAKE_EXPORT CUresult cuEventRecord(CUevent_st* e, CUstream_st* s) {
  if (!e) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  e->stream = is_own_stream(s) ? s : nullptr;
  e->kernels = e->stream ? s->launched : 0;
  e->recorded_ns = now_ns();
  return kSuccess;
}
namespace {
uint64_t g_queries_not_ready = 0;  // under g_mutex
}  // namespace
FAKE_EXPORT CUresult cuEventQuery(CUevent_st* e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (completed_at(e)) return kSuccess;
  ++g_queries_not_ready;
  return kNotReady;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent_st* e) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (completed_at(e)) return kSuccess;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent_st* start, CUevent_st* end) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!start->timed || !end->timed) return kInvalidHandle;  // as the driver answers for an untimed event
  const uint64_t a = completed_at(start), b = completed_at(end);
  if (!a || !b) return kNotReady;
  *ms = static_cast<float>((static_cast<double>(b) - static_cast<double>(a)) / 1e6);
  return kSuccess;
}
FAKE_EXPORT CUresult cuCtxSetCurrent(void* ctx) { return ctx == &g_context_dummy || !ctx ? kSuccess : kInvalidValue; }
// For the test client only: the oldest kernel still running on s has ended. With
// FAKE_CUDA_LOOKS_LOG set, how long it ran and how often an event was asked about and found
// unfinished by then (how often the profiler looked at a running kernel) are appended to that file.
FAKE_EXPORT void fake_cuda_kernel_done(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!is_own_stream(s) || s->end_ns.size() >= s->launched) return;
  const uint64_t end = now_ns(), start = s->start_ns[s->end_ns.size()];
  s->end_ns.push_back(end);
  if (const char* log = getenv("FAKE_CUDA_LOOKS_LOG"))
    if (FILE* f = fopen(log, "a")) {
      fprintf(f, "kernel_ns %llu not_ready_queries %llu\n", (unsigned long long)(end - start), (unsigned long long)g_queries_not_ready);
      fclose(f);
    }
}
namespace {
CUresult launch_on(CUfunc_st* f, CUstream_st* s) {
  if (!f) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (is_own_stream(s)) {
    ++s->launched;
    s->start_ns.push_back(now_ns());
  }
  return kSuccess;
}
}  // namespace

FAKE_EXPORT CUresult cuInit(unsigned) { return kSuccess; }
FAKE_EXPORT CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return kSuccess;
}
FAKE_EXPORT CUresult cuCtxGetCurrent(void** ctx) {
  *ctx = &g_context_dummy;
  return kSuccess;
}
FAKE_EXPORT CUresult cuCtxGetDevice(int* dev) {
  *dev = 0;
  return kSuccess;
}

FAKE_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags) {
  if (!p || !bytes || (flags & 0x4 /* IOMEMORY: ordinary memory is not */)) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  const uintptr_t base = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(4095);
  if (registered(base)) return kAlreadyRegistered;
  const size_t span = ((reinterpret_cast<uintptr_t>(p) + bytes + 4095) & ~uintptr_t(4095)) - base;
  g_registered.push_back({base, span});
  return kSuccess;
}
FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned flags) {
  if (!out || flags) return kInvalidValue;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!registered(reinterpret_cast<uintptr_t>(p))) return kInvalidValue;
  *out = reinterpret_cast<uintptr_t>(p);
  return kSuccess;
}
FAKE_EXPORT CUresult cuMemHostUnregister(void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const uintptr_t base = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(4095);
  for (size_t i = 0; i < g_registered.size(); ++i)
    if (g_registered[i].base == base) {
      g_registered.erase(g_registered.begin() + long(i));
      return kSuccess;
    }
  return kNotRegistered;
}
// Contexts: the one context can be destroyed or (as the primary context) reset and released;
// nothing else changes (there is nothing in it).
bool g_primary_active = true;
FAKE_EXPORT CUresult cuCtxDestroy_v2(void* ctx) { return ctx == &g_context_dummy ? kSuccess : kInvalidValue; }
FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState_v2(int dev, unsigned* flags, int* active) {
  if (dev != 0) return kInvalidValue;
  *flags = 0;
  *active = g_primary_active;
  return kSuccess;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(int dev, unsigned* flags, int* active) {
  return cuDevicePrimaryCtxGetState_v2(dev, flags, active);
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  if (dev != 0) return kInvalidValue;
  *ctx = &g_context_dummy;
  g_primary_active = true;
  return kSuccess;
}
// (Internal functions: a call from one exported function to another would reach a preloaded
// wrapper of the second, which a real driver's internal calls never do.)
static CUresult primary_release(int dev) { return dev == 0 ? kSuccess : kInvalidValue; }
static CUresult primary_reset(int dev) {
  if (dev != 0) return kInvalidValue;
  g_primary_active = false;
  return kSuccess;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return primary_release(dev); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(int dev) { return primary_reset(dev); }
// The first ABI of both, which the CUDA runtime asks cuGetProcAddress for (version 7000).
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset(int dev) { return primary_reset(dev); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(int dev) { return primary_release(dev); }

// Host memory only: every pointer is "not a CUDA allocation", as the driver answers for
// unregistered host memory.
FAKE_EXPORT CUresult cuPointerGetAttribute(void*, int, CUdeviceptr) { return kInvalidValue; }

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunc_st** f, void*, const char* name) {
  *f = new CUfunc_st{name};
  return kSuccess;
}
FAKE_EXPORT CUresult cuFuncGetName(const char** name, CUfunc_st* f) {
  if (!f) return kInvalidValue;
  *name = f->name.c_str();
  return kSuccess;
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunc_st* f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream_st* s,
                                    void**, void**) {
  return launch_on(f, s);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunc_st* f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream_st* s,
                                         void**, void**) {
  return launch_on(f, s);
}
FAKE_EXPORT CUresult cuGetExportTable(const void** table, const void*) {
  static const void* empty[1] = {nullptr};
  *table = empty;
  return kSuccess;
}

// The legacy ABIs the versioned names replaced: present so that old-version lookups have
// something (different) to return, which the profiler must pass through.
FAKE_EXPORT CUresult cuMemHostRegister(void* p, size_t bytes, unsigned flags) { return cuMemHostRegister_v2(p, bytes, flags); }
FAKE_EXPORT CUresult cuMemHostGetDevicePointer(unsigned* out, void* p, unsigned flags) {
  CUdeviceptr d = 0;
  CUresult r = cuMemHostGetDevicePointer_v2(&d, p, flags);
  *out = unsigned(d);
  return r;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags);
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  struct Entry {
    const char* name;
    int min_version;
    int ptds;  // -1 either, 0 legacy, 1 per-thread
    void* fn;
  };
  static const Entry kEntries[] = {
      {"cuInit", 2000, -1, reinterpret_cast<void*>(&cuInit)},
      {"cuDriverGetVersion", 2020, -1, reinterpret_cast<void*>(&cuDriverGetVersion)},
      {"cuCtxGetCurrent", 4000, -1, reinterpret_cast<void*>(&cuCtxGetCurrent)},
      {"cuMemHostRegister", 6050, -1, reinterpret_cast<void*>(&cuMemHostRegister_v2)},
      {"cuMemHostRegister", 4000, -1, reinterpret_cast<void*>(&cuMemHostRegister)},
      {"cuMemHostGetDevicePointer", 3020, -1, reinterpret_cast<void*>(&cuMemHostGetDevicePointer_v2)},
      {"cuMemHostGetDevicePointer", 2020, -1, reinterpret_cast<void*>(&cuMemHostGetDevicePointer)},
      {"cuMemHostUnregister", 4000, -1, reinterpret_cast<void*>(&cuMemHostUnregister)},
      {"cuModuleGetFunction", 2000, -1, reinterpret_cast<void*>(&cuModuleGetFunction)},
      {"cuLaunchKernel", 7000, 1, reinterpret_cast<void*>(&cuLaunchKernel_ptsz)},
      {"cuLaunchKernel", 4000, 0, reinterpret_cast<void*>(&cuLaunchKernel)},
      {"cuGetExportTable", 3000, -1, reinterpret_cast<void*>(&cuGetExportTable)},
      {"cuCtxDestroy", 4000, -1, reinterpret_cast<void*>(&cuCtxDestroy_v2)},
      {"cuDevicePrimaryCtxReset", 11000, -1, reinterpret_cast<void*>(&cuDevicePrimaryCtxReset_v2)},
      {"cuDevicePrimaryCtxReset", 7000, -1, reinterpret_cast<void*>(&cuDevicePrimaryCtxReset)},
      {"cuDevicePrimaryCtxRelease", 11000, -1, reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2)},
      {"cuDevicePrimaryCtxRelease", 7000, -1, reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease)},
      {"cuGetProcAddress", 12000, -1, reinterpret_cast<void*>(&cuGetProcAddress_v2)},
      {"cuGetProcAddress", 11030, -1, reinterpret_cast<void*>(&cuGetProcAddress)},
  };
  const int ptds = (flags & 2) ? 1 : 0;
  for (const Entry& e : kEntries)
    if (strcmp(e.name, symbol) == 0 && version >= e.min_version && (e.ptds < 0 || e.ptds == ptds)) {
      *pfn = e.fn;
      if (status) *status = 0;
      return kSuccess;
    }
  *pfn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return kNotFound;
}
FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
