#include "profiler/gpu/cuda_driver.h"

#include "profiler/runtime/real_symbols.h"

namespace sigmatrace::profiler::cuda {

namespace {
RealSymbol g_pointer_get_attribute{"cuPointerGetAttribute", "libcuda.so.1", {}, {}};
RealSymbol g_ctx_get_device{"cuCtxGetDevice", "libcuda.so.1", {}, {}};
RealSymbol g_func_get_name{"cuFuncGetName", "libcuda.so.1", {}, {}};
RealSymbol g_kernel_get_name{"cuKernelGetName", "libcuda.so.1", {}, {}};

// resolve_real() logs a missing function once; the driver simply being absent is not news.
template <typename Fn>
Fn quiet_lookup(RealSymbol& s) {
  s.logged.store(true, std::memory_order_relaxed);
  return real_function<Fn>(s);
}
}  // namespace

format::MemoryKind memory_kind(uint64_t addr, int64_t* gpu_ordinal, bool dmabuf) {
  *gpu_ordinal = -1;
  auto fn = quiet_lookup<CUresult (*)(void*, int, CUdeviceptr)>(g_pointer_get_attribute);
  if (!fn) return dmabuf ? format::MemoryKind::unknown : format::MemoryKind::host;
  unsigned type = 0;
  if (fn(&type, kPointerAttributeMemoryType, addr) == kSuccess && (type == kMemoryTypeDevice || type == kMemoryTypeUnified)) {
    int ordinal = -1;
    if (fn(&ordinal, kPointerAttributeDeviceOrdinal, addr) == kSuccess) *gpu_ordinal = ordinal;
    return format::MemoryKind::gpu;
  }
  return dmabuf ? format::MemoryKind::unknown : format::MemoryKind::host;
}

int64_t current_device() {
  auto fn = quiet_lookup<CUresult (*)(CUdevice*)>(g_ctx_get_device);
  CUdevice d = -1;
  if (!fn || fn(&d) != kSuccess) return -1;
  return d;
}

const char* function_name(CUfunction f) {
  auto fn = quiet_lookup<CUresult (*)(const char**, CUfunction)>(g_func_get_name);
  const char* name = nullptr;
  if (!fn || fn(&name, f) != kSuccess) return nullptr;
  return name;
}

const char* kernel_name(const void* kernel) {
  auto fn = quiet_lookup<CUresult (*)(const char**, const void*)>(g_kernel_get_name);
  const char* name = nullptr;
  if (!fn || fn(&name, kernel) != kSuccess) return nullptr;
  return name;
}

}  // namespace sigmatrace::profiler::cuda
