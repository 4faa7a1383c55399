// Where the application ends a CUDA context: cuCtxDestroy, cuDevicePrimaryCtxReset (what
// cudaDeviceReset calls) and the last cuDevicePrimaryCtxRelease of a primary context. The
// profiler keeps handles in contexts — the pollers' copy streams, the kernel markers' events and
// stream, the send queues of GPU memory — and a handle of an ended context is undefined to use
// (the driver may give its value to the next context). So before the real call, while the
// context is still alive, everything of the profiler's in it is destroyed and forgotten; a
// primary context released for the last time is noticed only after the fact, and then
// forgotten without a driver call on it.
#include "format/event_types.h"
#include "profiler/doorbell/poller.h"
#include "profiler/doorbell/send_queues.h"
#include "profiler/gpu/kernel_markers.h"
#include "profiler/providers/cuda/cuda_state.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::cuda {

namespace {

using format::CudaContextEnd;

RealSymbol g_primary_get_state{"cuDevicePrimaryCtxGetState", "libcuda.so.1", {}, {}};
RealSymbol g_primary_retain{"cuDevicePrimaryCtxRetain", "libcuda.so.1", {}, {}};

struct Released {
  uint64_t pollers = 0, markers = 0, queues = 0;
};

Released let_go(uintptr_t context, bool alive) {
  Released r;
  if (!context) return r;
  r.pollers = doorbell::release_context(context, alive);
  r.markers = forget_context_markers(context, alive);
  r.queues = doorbell::forget_queues_of_context(context, alive);
  return r;
}

void record_end(uintptr_t context, CudaContextEnd how, const Released& r, CUresult result) {
  if (!active()) return;
  record<format::EventType::cuda_context_end>(uint64_t{context}, static_cast<uint64_t>(how), r.pollers, r.markers, r.queues,
                                              int64_t{result});
}

bool primary_active(int device) {
  g_primary_get_state.logged.store(true, std::memory_order_relaxed);
  auto state = real_function<CUresult (*)(int, unsigned*, int*)>(g_primary_get_state);
  unsigned flags = 0;
  int on = 0;
  return state && state(device, &flags, &on) == kSuccess && on;
}

// The device's primary context while it is active (0 if not): retained and released at once
// (release: the real release of the caller's generation), which leaves its reference count as
// it was.
uintptr_t primary_context(int device, CUresult (*release)(int)) {
  if (!primary_active(device)) return 0;
  g_primary_retain.logged.store(true, std::memory_order_relaxed);
  auto retain = real_function<CUresult (*)(CUcontext*, int)>(g_primary_retain);
  CUcontext c = nullptr;
  if (!retain || !release || retain(&c, device) != kSuccess) return 0;
  release(device);
  return reinterpret_cast<uintptr_t>(c);
}

using DeviceFn = CUresult (*)(int);

CUresult primary_reset(RealSymbol& real_reset, RealSymbol& real_release, int device) {
  auto fn = real_function<DeviceFn>(real_reset);
  if (!fn) return kErrorNotInitialized;
  kit::ErrnoKeeper keep;
  const uintptr_t ctx = primary_context(device, real_function<DeviceFn>(real_release));
  const Released r = let_go(ctx, true);
  const CUresult result = fn(device);
  if (ctx) record_end(ctx, CudaContextEnd::reset, r, result);
  return result;
}

CUresult primary_release(RealSymbol& real_release, int device) {
  auto fn = real_function<DeviceFn>(real_release);
  if (!fn) return kErrorNotInitialized;
  kit::ErrnoKeeper keep;
  const uintptr_t ctx = primary_context(device, fn);
  const CUresult result = fn(device);
  if (ctx && result == kSuccess && !primary_active(device)) record_end(ctx, CudaContextEnd::release, let_go(ctx, false), result);
  return result;
}

}  // namespace
}  // namespace sigmatrace::profiler::cuda

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::cuda;
using sigmatrace::format::CudaContextEnd;

SIGMATRACE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  auto fn = real_function<CUresult (*)(CUcontext)>(real::cuCtxDestroy_v2);
  if (!fn) return kErrorNotInitialized;
  kit::ErrnoKeeper keep;
  const Released r = let_go(reinterpret_cast<uintptr_t>(ctx), true);
  const CUresult result = fn(ctx);
  record_end(reinterpret_cast<uintptr_t>(ctx), CudaContextEnd::destroy, r, result);
  return result;
}

SIGMATRACE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(int device) {
  return primary_reset(real::cuDevicePrimaryCtxReset_v2, real::cuDevicePrimaryCtxRelease_v2, device);
}
SIGMATRACE_EXPORT CUresult cuDevicePrimaryCtxReset(int device) {
  return primary_reset(real::cuDevicePrimaryCtxReset, real::cuDevicePrimaryCtxRelease, device);
}
SIGMATRACE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device) { return primary_release(real::cuDevicePrimaryCtxRelease_v2, device); }
SIGMATRACE_EXPORT CUresult cuDevicePrimaryCtxRelease(int device) { return primary_release(real::cuDevicePrimaryCtxRelease, device); }
