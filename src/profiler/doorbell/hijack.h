// The doorbell hijack (docs/gpu-doorbells.md). A GPU-initiated stack maps the NIC's doorbell page
// into the GPU in two steps: cuMemHostRegister of a range inside a devx UAR page, then
// cuMemHostGetDevicePointer of it. The first is passed through (and recorded); at the second the
// GPU is given, at the same offset, the device pointer of a pinned host page of the profiler's
// own, which a poller watches and forwards to the real register (poller.h). Unregistering the
// last registration of the page ends it. Ranges outside devx UARs are passed through untouched
// and not recorded.
//
// Control path only (registration calls), under one mutex.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "profiler/gpu/cuda_abi.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::doorbell {

// The driver functions the hijack calls itself (the real ones, never the wrappers).
struct DriverCalls {
  cuda::CUresult (*host_register)(void*, size_t, unsigned);
  cuda::CUresult (*host_get_device_pointer)(cuda::CUdeviceptr*, void*, unsigned);
  cuda::CUresult (*host_unregister)(void*);
  cuda::CUresult (*ctx_get_current)(cuda::CUcontext*);
};

// Once, from configure_doorbells (doorbell_subsystem.h): recording while *active. With
// DoorbellMode::off registrations are still recorded but the GPU gets the real pointer.
void configure_hijack(const Config& config, const std::atomic<bool>* active);

// After the real cuMemHostRegister returned result.
void after_host_register(const DriverCalls& d, void* p, size_t bytes, unsigned flags, cuda::CUresult result);
// In place of cuMemHostGetDevicePointer: calls the real one, then hands out the shadow page's
// pointer when p lies in a registered UAR page.
cuda::CUresult host_get_device_pointer(const DriverCalls& d, cuda::CUdeviceptr* out, void* p, unsigned flags);
// In place of cuMemHostUnregister: calls the real one, then ends the page's hijack when its last
// registration is gone.
cuda::CUresult host_unregister(const DriverCalls& d, void* p);

// Before a UAR page is freed: a page still hijacked (the application freed it without
// unregistering) stops being forwarded to, so no poller writes to an unmapped page.
void before_uar_free(uintptr_t base);

// Whether any doorbell page of this process is hijacked now (lock-free).
bool doorbells_hijacked();

}  // namespace sigmatrace::profiler::doorbell
