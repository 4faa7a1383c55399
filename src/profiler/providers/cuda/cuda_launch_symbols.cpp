// Kernel launches through every driver entry point (cuLaunchKernel, cuLaunchKernelEx,
// cuLaunchCooperativeKernel, cuGraphLaunch, each also in its per-thread-default-stream form), so
// the analysis can say which kernel was running when a GPU rang a doorbell. A launch is recorded
// after the driver accepted it (or failed it: the result is recorded too); a kernel's name is
// recorded once, the first time it is launched.
#include <atomic>
#include <cstring>

#include "format/event_types.h"
#include "profiler/doorbell/hijack.h"
#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/kernel_markers.h"
#include "profiler/providers/cuda/cuda_launch.h"
#include "profiler/providers/cuda/cuda_state.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::cuda {
namespace {

using format::CudaLaunchEntry;
using format::EventType;

// Kernels whose name has been recorded: an insert-only open-addressing set (CAS on the slot).
constexpr uint32_t kNamedCapacity = 4096;
std::atomic<uintptr_t> g_named[kNamedCapacity];

void name_once(uintptr_t f, NameOf name_of) {
  uint32_t i = static_cast<uint32_t>((f >> 4) * 0x9E3779B1u) % kNamedCapacity;
  for (uint32_t probe = 0; probe < 64; ++probe, i = (i + 1) % kNamedCapacity) {
    uintptr_t cur = g_named[i].load(std::memory_order_acquire);
    if (cur == f) return;
    if (cur == 0 && g_named[i].compare_exchange_strong(cur, f, std::memory_order_acq_rel)) {
      const char* name = name_of(f);
      const uint64_t words[] = {uint64_t{f}};
      record_with_bytes<EventType::cuda_function>(words, name ? name : "", name ? strlen(name) : 0);
      return;
    }
    if (cur == f) return;
  }
}

// A driver launch takes a CUfunction or, since CUDA 12, a library kernel (CUkernel) cast to one:
// what the statically linked runtime passes.
const char* driver_function_name(uintptr_t f) {
  const char* name = function_name(reinterpret_cast<CUfunction>(f));
  return name ? name : kernel_name(reinterpret_cast<const void*>(f));
}

}  // namespace

void on_launch(uint64_t tsc, CudaLaunchEntry entry, uintptr_t function, CUstream stream, const LaunchDims& d, CUresult r, NameOf name_of) {
  kit::ErrnoKeeper keep;
  const int64_t device = current_device();
  if (g_mode == TraceMode::aggregate) {
    aggregate_add(format::AggregateKey::cuda_launch, function, static_cast<uint64_t>(device + 1), 0);
    return;
  }
  if (name_of) name_once(function, name_of);
  // When it really ran (kernel_markers.h): an event after it on its stream, only while doorbells
  // are hijacked (the markers say which kernel rang them).
  const bool marked = r == kSuccess && doorbell::doorbells_hijacked() && mark_kernel_end(tsc, function, stream, device);
  record_at<EventType::cuda_launch>(tsc, uint64_t{function}, reinterpret_cast<uint64_t>(stream), device, static_cast<uint64_t>(entry),
                                 uint64_t{d.gx}, uint64_t{d.gy}, uint64_t{d.gz}, uint64_t{d.bx}, uint64_t{d.by}, uint64_t{d.bz},
                                 uint64_t{d.shared}, int64_t{r}, uint64_t{marked});
}

namespace {

using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                                    void**, void**);
using LaunchKernelExFn = CUresult (*)(const LaunchConfig*, CUfunction, void**, void**);
using LaunchCooperativeFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                         CUstream, void**);
using GraphLaunchFn = CUresult (*)(CUgraphExec, CUstream);
using Reentry = LaunchReentry;

CUresult launch_kernel(RealSymbol& s, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream stream, void** params, void** extra) {
  auto fn = real_function<LaunchKernelFn>(s);
  if (!fn) return kErrorNotInitialized;
  Reentry guard;
  const uint64_t t0 = read_tsc();
  CUresult r = fn(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  if (guard.outer && active())
    on_launch(t0, CudaLaunchEntry::launch_kernel, reinterpret_cast<uintptr_t>(f), stream, {gx, gy, gz, bx, by, bz, shared}, r,
              &driver_function_name);
  return r;
}

CUresult launch_kernel_ex(RealSymbol& s, const LaunchConfig* c, CUfunction f, void** params, void** extra) {
  auto fn = real_function<LaunchKernelExFn>(s);
  if (!fn) return kErrorNotInitialized;
  Reentry guard;
  const uint64_t t0 = read_tsc();
  CUresult r = fn(c, f, params, extra);
  if (guard.outer && active() && c)
    on_launch(t0, CudaLaunchEntry::launch_kernel_ex, reinterpret_cast<uintptr_t>(f), c->stream,
              {c->grid_x, c->grid_y, c->grid_z, c->block_x, c->block_y, c->block_z, c->shared_bytes}, r, &driver_function_name);
  return r;
}

CUresult launch_cooperative(RealSymbol& s, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, CUstream stream, void** params) {
  auto fn = real_function<LaunchCooperativeFn>(s);
  if (!fn) return kErrorNotInitialized;
  Reentry guard;
  const uint64_t t0 = read_tsc();
  CUresult r = fn(f, gx, gy, gz, bx, by, bz, shared, stream, params);
  if (guard.outer && active())
    on_launch(t0, CudaLaunchEntry::launch_cooperative_kernel, reinterpret_cast<uintptr_t>(f), stream, {gx, gy, gz, bx, by, bz, shared},
              r, &driver_function_name);
  return r;
}

CUresult graph_launch(RealSymbol& s, CUgraphExec g, CUstream stream) {
  auto fn = real_function<GraphLaunchFn>(s);
  if (!fn) return kErrorNotInitialized;
  Reentry guard;
  const uint64_t t0 = read_tsc();
  CUresult r = fn(g, stream);
  if (guard.outer && active()) on_launch(t0, CudaLaunchEntry::graph_launch, reinterpret_cast<uintptr_t>(g), stream, {}, r, nullptr);
  return r;
}

}  // namespace
}  // namespace sigmatrace::profiler::cuda

using namespace sigmatrace::profiler::cuda;

#define SIGMATRACE_LAUNCH_KERNEL_SHIM(name)                                                                              \
  SIGMATRACE_EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,         \
                                  unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {          \
    return launch_kernel(real::name, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);                          \
  }
SIGMATRACE_LAUNCH_KERNEL_SHIM(cuLaunchKernel)
SIGMATRACE_LAUNCH_KERNEL_SHIM(cuLaunchKernel_ptsz)

#define SIGMATRACE_LAUNCH_KERNEL_EX_SHIM(name)                                                           \
  SIGMATRACE_EXPORT CUresult name(const LaunchConfig* c, CUfunction f, void** params, void** extra) {  \
    return launch_kernel_ex(real::name, c, f, params, extra);                                            \
  }
SIGMATRACE_LAUNCH_KERNEL_EX_SHIM(cuLaunchKernelEx)
SIGMATRACE_LAUNCH_KERNEL_EX_SHIM(cuLaunchKernelEx_ptsz)

#define SIGMATRACE_LAUNCH_COOPERATIVE_SHIM(name)                                                                  \
  SIGMATRACE_EXPORT CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,  \
                                  unsigned bz, unsigned shared, CUstream stream, void** params) {                 \
    return launch_cooperative(real::name, f, gx, gy, gz, bx, by, bz, shared, stream, params);                     \
  }
SIGMATRACE_LAUNCH_COOPERATIVE_SHIM(cuLaunchCooperativeKernel)
SIGMATRACE_LAUNCH_COOPERATIVE_SHIM(cuLaunchCooperativeKernel_ptsz)

#define SIGMATRACE_GRAPH_LAUNCH_SHIM(name) \
  SIGMATRACE_EXPORT CUresult name(CUgraphExec g, CUstream stream) { return graph_launch(real::name, g, stream); }
SIGMATRACE_GRAPH_LAUNCH_SHIM(cuGraphLaunch)
SIGMATRACE_GRAPH_LAUNCH_SHIM(cuGraphLaunch_ptsz)
