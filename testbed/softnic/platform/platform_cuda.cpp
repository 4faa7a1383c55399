// The doorbell page as I/O memory (platform.hpp). GPU-initiated stacks map the NIC's doorbell
// register into the GPU with cudaHostRegister(Portable | Mapped | IoMemory); the driver accepts
// IoMemory only for device mappings, and softnic's UAR pages are ordinary memory. For ranges in
// those pages the flag is taken off before the driver sees the call, which then maps the page
// like any host page: the GPU's stores reach the memory softnic's engine watches. Every other
// registration is passed through unchanged.
//
// The CUDA runtime (shared and static) finds the driver with dlsym(libcuda, "cuGetProcAddress_v2")
// and then asks cuGetProcAddress for cuGetProcAddress itself, so both resolvers hand out these
// wrappers: cuGetProcAddress (v1 ABI below 12.0, v2 from 12.0) and cuMemHostRegister (6.5 on).
#include <cstdint>
#include <cstring>
#include <atomic>

#include <dlfcn.h>

#include "platform/platform.hpp"

extern "C" bool softnic_uar_contains(const void* p, size_t len);  // softnic's libmlx5

namespace softnic::platform {
namespace {

using CUresult = int;
constexpr CUresult kNotInitialized = 3;
constexpr unsigned kHostRegisterIoMemory = 0x04;
using HostRegisterFn = CUresult (*)(void*, size_t, unsigned);
using GetProcAddressFn = CUresult (*)(const char*, void**, int, uint64_t);
using GetProcAddressV2Fn = CUresult (*)(const char*, void**, int, uint64_t, int*);

std::atomic<void*> g_host_register{nullptr};
std::atomic<void*> g_get_proc_address{nullptr};
std::atomic<void*> g_get_proc_address_v2{nullptr};

CUresult host_register(void* p, size_t bytes, unsigned flags) {
  auto real = reinterpret_cast<HostRegisterFn>(g_host_register.load(std::memory_order_acquire));
  if (!real) return kNotInitialized;
  if ((flags & kHostRegisterIoMemory) && softnic_uar_contains(p, bytes)) flags &= ~kHostRegisterIoMemory;
  return real(p, bytes, flags);
}

CUresult get_proc_address(const char* symbol, void** pfn, int version, uint64_t flags) {
  auto real = reinterpret_cast<GetProcAddressFn>(g_get_proc_address.load(std::memory_order_acquire));
  if (!real) return kNotInitialized;
  CUresult r = real(symbol, pfn, version, flags);
  if (r == 0 && pfn && *pfn) *pfn = cuda_substitute(symbol, *pfn, version);
  return r;
}

CUresult get_proc_address_v2(const char* symbol, void** pfn, int version, uint64_t flags, int* status) {
  auto real = reinterpret_cast<GetProcAddressV2Fn>(g_get_proc_address_v2.load(std::memory_order_acquire));
  if (!real) return kNotInitialized;
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r == 0 && pfn && *pfn) *pfn = cuda_substitute(symbol, *pfn, version);
  return r;
}

// Whether p is the driver's own code (libcuda): a driver, or a stand-in for one, that resolves
// its names through the global scope hands back whatever interposes them (a profiler's
// wrappers), and those are not the driver to stand in front of.
bool in_driver(void* p) {
  Dl_info info{};
  if (!dladdr(p, &info) || !info.dli_fname) return false;
  const char* base = strrchr(info.dli_fname, '/');
  return strncmp(base ? base + 1 : info.dli_fname, "libcuda.so", 10) == 0;
}

// The first real function seen for a slot is kept (the one a second copy of libcuda would
// hand out is not ours to wrap); our own wrapper is never taken for the real one.
void* keep(std::atomic<void*>& slot, void* found, void* wrapper) {
  if (found == wrapper) return wrapper;
  if (!in_driver(found)) return found;
  void* expected = nullptr;
  slot.compare_exchange_strong(expected, found, std::memory_order_acq_rel);
  return (expected == nullptr || expected == found) ? wrapper : found;
}

}  // namespace

// version 0: a dlsym lookup, whose versioned names say the ABI themselves.
void* cuda_substitute(const char* name, void* found, int version) {
  if (!found || !name || strncmp(name, "cu", 2) != 0) return found;
  if (strcmp(name, "cuMemHostRegister_v2") == 0 || (strcmp(name, "cuMemHostRegister") == 0 && version >= 6050))
    return keep(g_host_register, found, reinterpret_cast<void*>(&host_register));
  if (strcmp(name, "cuGetProcAddress_v2") == 0 || (strcmp(name, "cuGetProcAddress") == 0 && version >= 12000))
    return keep(g_get_proc_address_v2, found, reinterpret_cast<void*>(&get_proc_address_v2));
  if (strcmp(name, "cuGetProcAddress") == 0 && (version == 0 || version >= 11030))
    return keep(g_get_proc_address, found, reinterpret_cast<void*>(&get_proc_address));
  return found;
}

}  // namespace softnic::platform
