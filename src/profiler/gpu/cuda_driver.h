// The profiler's own way into the CUDA driver, for the providers that need to know about GPU
// memory and contexts (verbs MRs, devx umems, the doorbell hijack, kernel launches). libcuda is
// asked, never loaded: without a program that loaded it, there is no GPU memory to describe.
#pragma once
#include <cstdint>

#include "format/event_types.h"
#include "profiler/gpu/cuda_abi.h"

namespace sigmatrace::profiler::cuda {

// GPU or host memory (and which GPU: *gpu_ordinal, -1 if not a GPU's). dmabuf: an MR made from a
// dma-buf, whose address says nothing about host memory.
format::MemoryKind memory_kind(uint64_t addr, int64_t* gpu_ordinal, bool dmabuf = false);

// The current context's device, -1 when there is none (or no driver).
int64_t current_device();

// The kernel's name (cuFuncGetName, CUDA 12.3 and later), or null.
const char* function_name(CUfunction f);
// The name of a library kernel (a cudaKernel_t / CUkernel: cuKernelGetName), or null.
const char* kernel_name(const void* kernel);

}  // namespace sigmatrace::profiler::cuda
