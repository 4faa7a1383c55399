// The few CUDA driver types and constants the cuda provider needs, declared here so that
// libsigmatrace.so builds without the CUDA toolkit (as ucx_abi.h and ofi_abi.h do for UCX and
// libfabric). Each one is the driver's stable ABI; tests/cuda/cuda_abi_test.cpp checks them
// against <cuda.h> where the toolkit is installed.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::cuda {

using CUresult = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2
using CUcontext = struct CUctx_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUdevice = int;

constexpr CUresult kSuccess = 0;
constexpr CUresult kErrorInvalidValue = 1;
constexpr CUresult kErrorNotFound = 500;
constexpr CUresult kErrorNotReady = 600;  // CUDA_ERROR_NOT_READY: a stream or event still has work

// cuMemHostRegister flags.
constexpr unsigned kHostRegisterPortable = 0x01;
constexpr unsigned kHostRegisterDeviceMap = 0x02;
constexpr unsigned kHostRegisterIoMemory = 0x04;

// cuGetProcAddress flags: CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
constexpr uint64_t kProcAddressPerThreadDefaultStream = 2;

// cuPointerGetAttribute attributes and CUmemorytype values.
constexpr int kPointerAttributeMemoryType = 2;
constexpr int kPointerAttributeDeviceOrdinal = 9;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kMemoryTypeUnified = 4;

// CUlaunchConfig (cuLaunchKernelEx), the layout of CUDA 12.0 and later.
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  CUstream stream;
  void* attrs;
  unsigned num_attrs;
};

// The CUDA runtime's types in its launch functions: cudaError_t, dim3, cudaLaunchConfig_t.
using RuntimeError = int;
struct Dim3 {
  unsigned x, y, z;
};
struct RuntimeLaunchConfig {
  Dim3 grid, block;
  size_t shared_bytes;
  CUstream stream;
  void* attrs;
  unsigned num_attrs;
};

struct Uuid {
  unsigned char bytes[16];
};

}  // namespace sigmatrace::profiler::cuda
