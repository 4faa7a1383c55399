// What the cuda provider's two files share: its switch, its mode, and the real driver functions
// behind its wrappers.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiler/gpu/cuda_abi.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::cuda {

extern std::atomic<bool> g_active;  // recording (the "cuda" provider is on)
extern TraceMode g_mode;

inline bool active() { return g_active.load(std::memory_order_relaxed); }

// The driver's own error when the real function is not there (a program that calls a driver
// function without the driver loaded cannot happen; a hook must still answer something).
constexpr CUresult kErrorNotInitialized = 3;

// Exported names of the functions the provider interposes: X(exported_name).
#define SIGMATRACE_CUDA_MEMORY_SYMBOLS(X) X(cuMemHostRegister_v2) X(cuMemHostGetDevicePointer_v2) X(cuMemHostUnregister)
#define SIGMATRACE_CUDA_RESOLVER_SYMBOLS(X) X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuGetExportTable)
#define SIGMATRACE_CUDA_LAUNCH_SYMBOLS(X)                                                             \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)               \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)
// Where a context ends: what the profiler holds in it is let go first (cuda_contexts.cpp).
// The CUDA runtime asks cuGetProcAddress for the primary-context calls at version 7000 (their
// first ABI, the same signature), so both generations are wrapped.
#define SIGMATRACE_CUDA_CONTEXT_SYMBOLS(X)                                                         \
  X(cuCtxDestroy_v2) X(cuDevicePrimaryCtxReset_v2) X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxReset) \
  X(cuDevicePrimaryCtxRelease)
#define SIGMATRACE_CUDA_SYMBOLS(X)                                                                 \
  SIGMATRACE_CUDA_MEMORY_SYMBOLS(X) SIGMATRACE_CUDA_RESOLVER_SYMBOLS(X) SIGMATRACE_CUDA_LAUNCH_SYMBOLS(X) \
  SIGMATRACE_CUDA_CONTEXT_SYMBOLS(X)
// The shared runtime's launch functions (libcudart.so.13, cudart_launch_symbols.cpp).
#define SIGMATRACE_CUDART_LAUNCH_SYMBOLS(X)                                                                   \
  X(__cudaLaunchKernel) X(__cudaLaunchKernel_ptsz) X(cudaLaunchKernel) X(cudaLaunchKernel_ptsz)               \
  X(cudaLaunchKernelExC) X(cudaLaunchKernelExC_ptsz) X(cudaLaunchCooperativeKernel) X(cudaLaunchCooperativeKernel_ptsz)

namespace real {
#define SIGMATRACE_CUDA_REAL_DECL(name) extern RealSymbol name;
SIGMATRACE_CUDA_SYMBOLS(SIGMATRACE_CUDA_REAL_DECL)
SIGMATRACE_CUDART_LAUNCH_SYMBOLS(SIGMATRACE_CUDA_REAL_DECL)
#undef SIGMATRACE_CUDA_REAL_DECL
}  // namespace real

}  // namespace sigmatrace::profiler::cuda

// The wrappers, with the driver's signatures (cuda_symbols.cpp, cuda_launch_symbols.cpp).
namespace sigmatrace::profiler::cuda::abi {
using namespace sigmatrace::profiler::cuda;
extern "C" {
CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned flags);
CUresult cuMemHostUnregister(void* p);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags);
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status);
CUresult cuGetExportTable(const void** table, const Uuid* id);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuDevicePrimaryCtxReset_v2(int device);
CUresult cuDevicePrimaryCtxRelease_v2(int device);
CUresult cuDevicePrimaryCtxReset(int device);
CUresult cuDevicePrimaryCtxRelease(int device);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                             void**);
CUresult cuLaunchKernelEx(const LaunchConfig*, CUfunction, void**, void**);
CUresult cuLaunchKernelEx_ptsz(const LaunchConfig*, CUfunction, void**, void**);
CUresult cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                                        void**);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
RuntimeError __cudaLaunchKernel(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError __cudaLaunchKernel_ptsz(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError cudaLaunchKernel(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError cudaLaunchKernel_ptsz(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError cudaLaunchCooperativeKernel(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError cudaLaunchCooperativeKernel_ptsz(const void*, Dim3, Dim3, void**, size_t, CUstream);
RuntimeError cudaLaunchKernelExC(const RuntimeLaunchConfig*, const void*, void**);
RuntimeError cudaLaunchKernelExC_ptsz(const RuntimeLaunchConfig*, const void*, void**);
}
}  // namespace sigmatrace::profiler::cuda::abi
