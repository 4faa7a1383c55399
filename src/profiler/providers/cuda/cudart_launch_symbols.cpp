// Kernel launches through the shared CUDA runtime (libcudart.so.13): since CUDA 13 a <<<>>> launch
// compiles to __cudaLaunchKernel(cudaKernel_t, ...), and cudaLaunchKernel & co. are the runtime's
// other launch functions. They are wrapped so that a launch is recorded with its runtime entry
// point and kernel name even where the runtime carries it out without a driver entry point the
// cuda provider wraps. The statically linked runtime (NCCL, NVSHMEM) cannot be interposed this
// way; on the H200 it launched through the driver entry points it got from cuGetProcAddress,
// which are wrapped (cuda_launch_symbols.cpp). A launch that reaches both is recorded once.
#include "profiler/gpu/cuda_driver.h"
#include "profiler/providers/cuda/cuda_launch.h"
#include "profiler/providers/cuda/cuda_state.h"
#include "profiler/runtime/tsc.h"

namespace sigmatrace::profiler::cuda {

namespace real {
#define SIGMATRACE_CUDART_REAL_DEF(name) RealSymbol name{#name, "libcudart.so.13", {}, {}};
SIGMATRACE_CUDART_LAUNCH_SYMBOLS(SIGMATRACE_CUDART_REAL_DEF)
RealSymbol cudaFuncGetName{"cudaFuncGetName", "libcudart.so.13", {}, {}};
RealSymbol cudaPeekAtLastError{"cudaPeekAtLastError", "libcudart.so.13", {}, {}};
RealSymbol cudaGetLastError{"cudaGetLastError", "libcudart.so.13", {}, {}};
#undef SIGMATRACE_CUDART_REAL_DEF
}  // namespace real

namespace {

using format::CudaLaunchEntry;
constexpr RuntimeError kRuntimeNotLoaded = 35;  // cudaErrorInsufficientDriver: what a missing runtime would say

const char* library_kernel_name(uintptr_t k) { return kernel_name(reinterpret_cast<const void*>(k)); }
// cudaFuncGetName is a runtime call: a failure sets the thread's last error, which belongs to the
// program. It is asked only when no error is pending (after a successful launch, see
// name_now), and a failure's error is taken back at once, leaving cudaSuccess as it was.
const char* host_stub_name(uintptr_t f) {
  real::cudaFuncGetName.logged.store(true, std::memory_order_relaxed);
  real::cudaGetLastError.logged.store(true, std::memory_order_relaxed);
  auto fn = real_function<RuntimeError (*)(const char**, const void*)>(real::cudaFuncGetName);
  auto take_back = real_function<RuntimeError (*)()>(real::cudaGetLastError);
  const char* name = nullptr;
  if (!fn || !take_back) return nullptr;
  if (fn(&name, reinterpret_cast<const void*>(f)) == 0) return name;
  take_back();
  return nullptr;
}

// The naming function to use for a launch that returned r: none (the kernel is named at a later
// launch) when it failed or an earlier error is still pending, so that the runtime's last error
// stays the program's.
NameOf name_now(NameOf name_of, RuntimeError r) {
  if (name_of != &host_stub_name) return name_of;  // a driver query: the runtime's error is not touched
  real::cudaPeekAtLastError.logged.store(true, std::memory_order_relaxed);
  auto peek = real_function<RuntimeError (*)()>(real::cudaPeekAtLastError);
  return r == 0 && peek && peek() == 0 ? name_of : nullptr;
}

using LaunchFn = RuntimeError (*)(const void*, Dim3, Dim3, void**, size_t, CUstream);
using LaunchExFn = RuntimeError (*)(const RuntimeLaunchConfig*, const void*, void**);

RuntimeError launch(RealSymbol& s, CudaLaunchEntry entry, NameOf name_of, const void* f, Dim3 g, Dim3 b, void** args, size_t shared,
                    CUstream stream) {
  auto fn = real_function<LaunchFn>(s);
  if (!fn) return kRuntimeNotLoaded;
  LaunchReentry guard;
  const uint64_t t0 = read_tsc();
  RuntimeError r = fn(f, g, b, args, shared, stream);
  if (guard.outer && active())
    on_launch(t0, entry, reinterpret_cast<uintptr_t>(f), stream, {g.x, g.y, g.z, b.x, b.y, b.z, unsigned(shared)}, r, name_now(name_of, r));
  return r;
}

RuntimeError launch_ex(RealSymbol& s, const RuntimeLaunchConfig* c, const void* f, void** args) {
  auto fn = real_function<LaunchExFn>(s);
  if (!fn) return kRuntimeNotLoaded;
  LaunchReentry guard;
  const uint64_t t0 = read_tsc();
  RuntimeError r = fn(c, f, args);
  if (guard.outer && active() && c)
    on_launch(t0, CudaLaunchEntry::runtime_launch_kernel_ex, reinterpret_cast<uintptr_t>(f), c->stream,
              {c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y, c->block.z, unsigned(c->shared_bytes)}, r,
              name_now(&host_stub_name, r));
  return r;
}

}  // namespace
}  // namespace sigmatrace::profiler::cuda

using namespace sigmatrace::profiler::cuda;
using sigmatrace::format::CudaLaunchEntry;

#define SIGMATRACE_CUDART_LAUNCH_SHIM(name, entry, name_of)                                                                      \
  SIGMATRACE_EXPORT RuntimeError name(const void* f, Dim3 g, Dim3 b, void** args, size_t shared, CUstream stream) {              \
    return launch(real::name, entry, name_of, f, g, b, args, shared, stream);                                                    \
  }
SIGMATRACE_CUDART_LAUNCH_SHIM(__cudaLaunchKernel, CudaLaunchEntry::runtime_launch_kernel, &library_kernel_name)
SIGMATRACE_CUDART_LAUNCH_SHIM(__cudaLaunchKernel_ptsz, CudaLaunchEntry::runtime_launch_kernel, &library_kernel_name)
SIGMATRACE_CUDART_LAUNCH_SHIM(cudaLaunchKernel, CudaLaunchEntry::runtime_launch_kernel, &host_stub_name)
SIGMATRACE_CUDART_LAUNCH_SHIM(cudaLaunchKernel_ptsz, CudaLaunchEntry::runtime_launch_kernel, &host_stub_name)
SIGMATRACE_CUDART_LAUNCH_SHIM(cudaLaunchCooperativeKernel, CudaLaunchEntry::runtime_launch_cooperative_kernel, &host_stub_name)
SIGMATRACE_CUDART_LAUNCH_SHIM(cudaLaunchCooperativeKernel_ptsz, CudaLaunchEntry::runtime_launch_cooperative_kernel, &host_stub_name)
SIGMATRACE_EXPORT RuntimeError cudaLaunchKernelExC(const RuntimeLaunchConfig* c, const void* f, void** args) {
  return launch_ex(real::cudaLaunchKernelExC, c, f, args);
}
SIGMATRACE_EXPORT RuntimeError cudaLaunchKernelExC_ptsz(const RuntimeLaunchConfig* c, const void* f, void** args) {
  return launch_ex(real::cudaLaunchKernelExC_ptsz, c, f, args);
}
