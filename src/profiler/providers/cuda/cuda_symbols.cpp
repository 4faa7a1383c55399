// The "cuda" provider: the CUDA driver functions through which GPU-initiated stacks map the NIC
// doorbell into the GPU (the doorbell hijack, profiler/doorbell/), and kernel launches
// (cuda_launch_symbols.cpp). However a program reaches the driver, it gets these wrappers:
//   - linked against libcuda: the exported symbols (cuMemHostRegister_v2, ...);
//   - dlsym/dlvsym on libcuda: the resolver hooks hand out the same wrappers;
//   - cuGetProcAddress / cuGetProcAddress_v2, which the CUDA runtime (shared and static alike)
//     uses for every driver function after asking it for cuGetProcAddress itself: the wrappers
//     of the instrumented functions (for the versions and stream flavours whose ABI they have),
//     the driver's own pointer for everything else. cudaGetDriverEntryPoint(ByVersion) is the
//     runtime's front end to the same lookup and needs nothing of its own.
//   - cuGetExportTable is passed through untouched; which tables were asked for is recorded.
// Calls not instrumented behave exactly as without the profiler.
#include <cstring>

#include "format/event_types.h"
#include "profiler/doorbell/hijack.h"
#include "profiler/providers/cuda/cuda_state.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::cuda {

std::atomic<bool> g_active{false};
TraceMode g_mode = TraceMode::simple;

namespace real {
#define SIGMATRACE_CUDA_REAL_DEF(name) RealSymbol name{#name, "libcuda.so.1", {}, {}};
SIGMATRACE_CUDA_SYMBOLS(SIGMATRACE_CUDA_REAL_DEF)
#undef SIGMATRACE_CUDA_REAL_DEF
RealSymbol cuCtxGetCurrent{"cuCtxGetCurrent", "libcuda.so.1", {}, {}};
}  // namespace real

namespace {

using format::EventType;

// Whether the hijack runs: set at init from SIGMATRACE_DOORBELLS, independent of recording
// (after the profiler stops recording at exit, mapped pages must still be forwarded and cleaned
// up).
std::atomic<bool> g_hijack{false};

using HostRegisterFn = CUresult (*)(void*, size_t, unsigned);
using HostGetDevicePointerFn = CUresult (*)(CUdeviceptr*, void*, unsigned);
using HostUnregisterFn = CUresult (*)(void*);
using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using GetProcAddressFn = CUresult (*)(const char*, void**, int, uint64_t);
using GetProcAddressV2Fn = CUresult (*)(const char*, void**, int, uint64_t, int*);
using GetExportTableFn = CUresult (*)(const void**, const Uuid*);

doorbell::DriverCalls driver_calls() {
  return {real_function<HostRegisterFn>(real::cuMemHostRegister_v2),
          real_function<HostGetDevicePointerFn>(real::cuMemHostGetDevicePointer_v2),
          real_function<HostUnregisterFn>(real::cuMemHostUnregister), real_function<CtxGetCurrentFn>(real::cuCtxGetCurrent)};
}

bool hijacking() { return g_hijack.load(std::memory_order_relaxed); }

// What cuGetProcAddress hands out for a name: the wrapper that has the ABI the driver returns
// for that name, version and stream flavour (cuda.h's versioned names; the per-thread default
// stream forms are the _ptsz symbols).
enum Stream : int { any_stream = 0, legacy_stream = 1, per_thread_stream = 2 };
struct ProcEntry {
  const char* name;     // as asked for
  int min_version;      // first CUDA version (1000 * major + 10 * minor) of this ABI
  int max_version;      // first version with another ABI (0: none yet)
  Stream stream;
  RealSymbol* real;
  void* wrapper;
};

}  // namespace
}  // namespace sigmatrace::profiler::cuda

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::cuda;
namespace format = sigmatrace::format;

SIGMATRACE_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags) {
  auto fn = real_function<HostRegisterFn>(real::cuMemHostRegister_v2);
  if (!fn) return kErrorNotInitialized;
  CUresult r = fn(p, bytes, flags);
  if (hijacking()) {
    kit::ErrnoKeeper keep;
    doorbell::after_host_register(driver_calls(), p, bytes, flags, r);
  }
  return r;
}

SIGMATRACE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned flags) {
  auto fn = real_function<HostGetDevicePointerFn>(real::cuMemHostGetDevicePointer_v2);
  if (!fn) return kErrorNotInitialized;
  if (!hijacking()) return fn(out, p, flags);
  kit::ErrnoKeeper keep;
  return doorbell::host_get_device_pointer(driver_calls(), out, p, flags);
}

SIGMATRACE_EXPORT CUresult cuMemHostUnregister(void* p) {
  auto fn = real_function<HostUnregisterFn>(real::cuMemHostUnregister);
  if (!fn) return kErrorNotInitialized;
  if (!hijacking()) return fn(p);
  kit::ErrnoKeeper keep;
  return doorbell::host_unregister(driver_calls(), p);
}

SIGMATRACE_EXPORT CUresult cuGetExportTable(const void** table, const Uuid* id) {
  auto fn = real_function<GetExportTableFn>(real::cuGetExportTable);
  if (!fn) return kErrorNotInitialized;
  CUresult r = fn(table, id);
  if (active() && id && g_mode != TraceMode::aggregate) {
    kit::ErrnoKeeper keep;
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; ++i) hi = (hi << 8) | id->bytes[i];
    for (int i = 8; i < 16; ++i) lo = (lo << 8) | id->bytes[i];
    record<format::EventType::cuda_export_table>(hi, lo, int64_t{r});
  }
  return r;
}

// Declared here, defined below: the two resolver entry points share hand_out().
namespace sigmatrace::profiler::cuda {
namespace {
void* hand_out(const char* symbol, void* found, int version, uint64_t flags, format::CudaLookupVia via);
}
}  // namespace sigmatrace::profiler::cuda

SIGMATRACE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  auto fn = real_function<GetProcAddressFn>(real::cuGetProcAddress);
  if (!fn) return kErrorNotInitialized;
  CUresult r = fn(symbol, pfn, version, flags);
  if (r == kSuccess && pfn && *pfn) *pfn = hand_out(symbol, *pfn, version, flags, format::CudaLookupVia::get_proc_address);
  return r;
}

SIGMATRACE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  auto fn = real_function<GetProcAddressV2Fn>(real::cuGetProcAddress_v2);
  if (!fn) return kErrorNotInitialized;
  CUresult r = fn(symbol, pfn, version, flags, status);
  if (r == kSuccess && pfn && *pfn) *pfn = hand_out(symbol, *pfn, version, flags, format::CudaLookupVia::get_proc_address_v2);
  return r;
}

namespace sigmatrace::profiler::cuda {
namespace {

#define SIGMATRACE_PROC(name, lo, hi, stream, exported) \
  {name, lo, hi, stream, &real::exported, reinterpret_cast<void*>(&abi::exported)}
const ProcEntry kProcEntries[] = {
    SIGMATRACE_PROC("cuMemHostRegister", 6050, 0, any_stream, cuMemHostRegister_v2),
    SIGMATRACE_PROC("cuMemHostGetDevicePointer", 3020, 0, any_stream, cuMemHostGetDevicePointer_v2),
    SIGMATRACE_PROC("cuMemHostUnregister", 4000, 0, any_stream, cuMemHostUnregister),
    SIGMATRACE_PROC("cuGetProcAddress", 11030, 12000, any_stream, cuGetProcAddress),
    SIGMATRACE_PROC("cuGetProcAddress", 12000, 0, any_stream, cuGetProcAddress_v2),
    SIGMATRACE_PROC("cuGetExportTable", 3000, 0, any_stream, cuGetExportTable),
    SIGMATRACE_PROC("cuCtxDestroy", 4000, 0, any_stream, cuCtxDestroy_v2),
    SIGMATRACE_PROC("cuDevicePrimaryCtxReset", 7000, 11000, any_stream, cuDevicePrimaryCtxReset),
    SIGMATRACE_PROC("cuDevicePrimaryCtxReset", 11000, 0, any_stream, cuDevicePrimaryCtxReset_v2),
    SIGMATRACE_PROC("cuDevicePrimaryCtxRelease", 7000, 11000, any_stream, cuDevicePrimaryCtxRelease),
    SIGMATRACE_PROC("cuDevicePrimaryCtxRelease", 11000, 0, any_stream, cuDevicePrimaryCtxRelease_v2),
    SIGMATRACE_PROC("cuLaunchKernel", 4000, 0, legacy_stream, cuLaunchKernel),
    SIGMATRACE_PROC("cuLaunchKernel", 7000, 0, per_thread_stream, cuLaunchKernel_ptsz),
    SIGMATRACE_PROC("cuLaunchKernelEx", 11060, 0, legacy_stream, cuLaunchKernelEx),
    SIGMATRACE_PROC("cuLaunchKernelEx", 11060, 0, per_thread_stream, cuLaunchKernelEx_ptsz),
    SIGMATRACE_PROC("cuLaunchCooperativeKernel", 9000, 0, legacy_stream, cuLaunchCooperativeKernel),
    SIGMATRACE_PROC("cuLaunchCooperativeKernel", 9000, 0, per_thread_stream, cuLaunchCooperativeKernel_ptsz),
    SIGMATRACE_PROC("cuGraphLaunch", 10000, 0, legacy_stream, cuGraphLaunch),
    SIGMATRACE_PROC("cuGraphLaunch", 10000, 0, per_thread_stream, cuGraphLaunch_ptsz),
};
#undef SIGMATRACE_PROC

void* hand_out(const char* symbol, void* found, int version, uint64_t flags, format::CudaLookupVia via) {
  if (!symbol || strncmp(symbol, "cu", 2) != 0 || !active()) return found;
  // A driver (or a shim in front of it) that resolves its own symbols through the global scope
  // can hand back our own wrapper: it is already what the caller should get, and must never be
  // taken for the real function (the wrapper would call itself).
  bool ours = false;
  for (const ProcEntry& e : kProcEntries) ours |= found == e.wrapper;
  const Stream stream = (flags & kProcAddressPerThreadDefaultStream) ? per_thread_stream : legacy_stream;
  bool known = false, wrapped = ours;
  void* out = found;
  for (const ProcEntry& e : kProcEntries) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (ours || version < e.min_version || (e.max_version && version >= e.max_version)) continue;
    if (e.stream != any_stream && e.stream != stream) continue;
    void* expected = nullptr;
    e.real->address.compare_exchange_strong(expected, found, std::memory_order_acq_rel);
    out = e.wrapper;
    wrapped = true;
    break;
  }
  if (known && g_mode != TraceMode::aggregate) {
    kit::ErrnoKeeper keep;
    const uint64_t words[] = {static_cast<uint64_t>(via), static_cast<uint64_t>(version), flags, uint64_t{wrapped}};
    record_with_bytes<EventType::cuda_lookup>(words, symbol, strlen(symbol));
  }
  return out;
}

// The doorbell subsystem (pollers, hijack, markers) is configured by the lifecycle, not here.
bool init_cuda(const Config& config, std::string*) {
  g_mode = config.mode;
  g_hijack.store(true, std::memory_order_release);
  return true;
}

const InterposedSymbol kCudaSymbols[] = {
#define SIGMATRACE_INTERPOSED(name) {&real::name, reinterpret_cast<void*>(&abi::name), &g_active},
    SIGMATRACE_CUDA_SYMBOLS(SIGMATRACE_INTERPOSED) SIGMATRACE_CUDART_LAUNCH_SYMBOLS(SIGMATRACE_INTERPOSED)
#undef SIGMATRACE_INTERPOSED
};

}  // namespace

extern const InterposedSymbolTable kCudaInterposedSymbols = {kCudaSymbols, sizeof kCudaSymbols / sizeof kCudaSymbols[0]};

}  // namespace sigmatrace::profiler::cuda

namespace sigmatrace::profiler {
extern const Provider kCudaProvider = {"cuda",
                                       "CUDA driver: the GPU doorbell hijack and kernel launches",
                                       &cuda::init_cuda,
                                       &cuda::g_active,
                                       &cuda::kCudaInterposedSymbols};
}  // namespace sigmatrace::profiler
