#include "profiler/gpu/device_copy.h"

#include "profiler/gpu/cuda_abi.h"
#include "profiler/runtime/real_symbols.h"

namespace sigmatrace::profiler::cuda {

namespace {

constexpr int kPointerAttributeContext = 1;  // CU_POINTER_ATTRIBUTE_CONTEXT
constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING

RealSymbol g_pointer_get_attribute{"cuPointerGetAttribute", "libcuda.so.1", {}, {}};
RealSymbol g_ctx_get_current{"cuCtxGetCurrent", "libcuda.so.1", {}, {}};
RealSymbol g_ctx_set_current{"cuCtxSetCurrent", "libcuda.so.1", {}, {}};
RealSymbol g_stream_create{"cuStreamCreate", "libcuda.so.1", {}, {}};
RealSymbol g_stream_destroy{"cuStreamDestroy_v2", "libcuda.so.1", {}, {}};
RealSymbol g_stream_query{"cuStreamQuery", "libcuda.so.1", {}, {}};
RealSymbol g_memcpy_dtoh_async{"cuMemcpyDtoHAsync_v2", "libcuda.so.1", {}, {}};
RealSymbol g_mem_alloc_host{"cuMemAllocHost_v2", "libcuda.so.1", {}, {}};
RealSymbol g_mem_free_host{"cuMemFreeHost", "libcuda.so.1", {}, {}};
RealSymbol g_exchange_capture_mode{"cuThreadExchangeStreamCaptureMode", "libcuda.so.1", {}, {}};
constexpr int kStreamCaptureModeRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

}  // namespace

uintptr_t memory_context(uint64_t addr) {
  auto fn = real_function<CUresult (*)(void*, int, CUdeviceptr)>(g_pointer_get_attribute);
  CUcontext c = nullptr;
  if (!fn || fn(&c, kPointerAttributeContext, addr) != kSuccess) return 0;
  return reinterpret_cast<uintptr_t>(c);
}

uintptr_t current_context() {
  auto get = real_function<CUresult (*)(CUcontext*)>(g_ctx_get_current);
  CUcontext c = nullptr;
  if (!get || get(&c) != kSuccess) return 0;
  return reinterpret_cast<uintptr_t>(c);
}

void relax_stream_capture_on_this_thread() {
  g_exchange_capture_mode.logged.store(true, std::memory_order_relaxed);  // absent before CUDA 10.1: nothing to relax
  auto fn = real_function<CUresult (*)(int*)>(g_exchange_capture_mode);
  int mode = kStreamCaptureModeRelaxed;
  if (fn) fn(&mode);
}

void leave_context(uintptr_t context) {
  auto get = real_function<CUresult (*)(CUcontext*)>(g_ctx_get_current);
  auto set = real_function<CUresult (*)(CUcontext)>(g_ctx_set_current);
  CUcontext c = nullptr;
  if (get && set && get(&c) == kSuccess && reinterpret_cast<uintptr_t>(c) == context) set(nullptr);
}

void* alloc_pinned(size_t bytes) {
  g_mem_alloc_host.logged.store(true, std::memory_order_relaxed);  // absent: no pinned memory, which callers handle
  auto fn = real_function<CUresult (*)(void**, size_t)>(g_mem_alloc_host);
  void* p = nullptr;
  if (!fn || fn(&p, bytes) != kSuccess) return nullptr;
  return p;
}

void free_pinned(void* p) {
  g_mem_free_host.logged.store(true, std::memory_order_relaxed);
  auto fn = real_function<CUresult (*)(void*)>(g_mem_free_host);
  if (fn && p) fn(p);
}

bool DeviceCopyStream::make_current() {
  auto get = real_function<CUresult (*)(CUcontext*)>(g_ctx_get_current);
  auto set = real_function<CUresult (*)(CUcontext)>(g_ctx_set_current);
  if (!get || !set) return false;
  CUcontext c = nullptr;
  if (get(&c) == kSuccess && reinterpret_cast<uintptr_t>(c) == context_) return true;
  return set(reinterpret_cast<CUcontext>(context_)) == kSuccess;
}

bool DeviceCopyStream::open(uintptr_t context, std::string* why) {
  context_ = context;
  auto create = real_function<CUresult (*)(void**, unsigned)>(g_stream_create);
  if (!create || !real_function<void*>(g_memcpy_dtoh_async) || !real_function<void*>(g_stream_query)) {
    *why = "the CUDA driver lacks cuStreamCreate, cuMemcpyDtoHAsync_v2 or cuStreamQuery";
    return false;
  }
  if (!make_current()) {
    *why = "cannot make the send queue's CUDA context current on the poller thread";
    return false;
  }
  if (CUresult r = create(&stream_, kStreamNonBlocking)) {
    *why = "cuStreamCreate failed with CUresult " + std::to_string(r);
    stream_ = nullptr;
    return false;
  }
  return true;
}

bool DeviceCopyStream::copy(void* dst, uint64_t src, size_t bytes) {
  auto fn = real_function<CUresult (*)(void*, CUdeviceptr, size_t, void*)>(g_memcpy_dtoh_async);
  return stream_ && make_current() && fn(dst, src, bytes, stream_) == kSuccess;
}

bool DeviceCopyStream::wait(const WhileWaiting& while_waiting) {
  auto query = real_function<CUresult (*)(void*)>(g_stream_query);
  if (!stream_ || !query || !make_current()) return false;
  for (;;) {
    const CUresult r = query(stream_);
    if (r != kErrorNotReady) return r == kSuccess;
    if (while_waiting.fn) while_waiting.fn(while_waiting.arg);
  }
}

void DeviceCopyStream::close() {
  auto fn = real_function<CUresult (*)(void*)>(g_stream_destroy);
  if (stream_ && fn && make_current()) fn(stream_);
  stream_ = nullptr;
}

}  // namespace sigmatrace::profiler::cuda
