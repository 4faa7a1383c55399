// What the launch wrappers of the driver (cuda_launch_symbols.cpp) and of the runtime
// (cudart_launch_symbols.cpp) share: one way to record a launch, and one re-entry guard, so that
// a runtime launch that reaches a wrapped driver entry point is recorded once.
#pragma once
#include <cstdint>

#include "format/event_types.h"
#include "profiler/gpu/cuda_abi.h"
#include "profiler/providers/provider_kit.h"

namespace sigmatrace::profiler::cuda {

struct LaunchDims {
  unsigned gx, gy, gz, bx, by, bz, shared;
};
// The name of a launched function (null: unknown), asked once per function.
using NameOf = const char* (*)(uintptr_t function);

// Records a launch made at TSC tsc, read before the launch call: a kernel starts (and may ring
// doorbells) before the call returns (and, the first time, the function's name via name_of; null:
// not named).
void on_launch(uint64_t tsc, format::CudaLaunchEntry entry, uintptr_t function, CUstream stream, const LaunchDims& d, CUresult r,
               NameOf name_of);

using LaunchReentry = kit::Reentry<struct CudaLaunchCalls>;

}  // namespace sigmatrace::profiler::cuda
