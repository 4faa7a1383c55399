// softnic's platform stand-in, libsoftnic_platform.so: what a machine with a ConnectX provides
// beyond the NIC's user-space libraries, for programs that look for it. It is preloaded (by
// `sigmatrace profile --softnic`, beneath the profiler, or by testbed/softnic/softnic-run) and
// gives:
//   - sysfs: /sys/class/infiniband and /sys/class/infiniband_verbs show the emulated devices
//     (platform_sysfs.cpp): what the mlx5 kernel driver would create;
//   - the doorbell page as I/O memory: a UAR of a ConnectX is a device mapping, which CUDA
//     registers with cudaHostRegisterIoMemory; softnic's is ordinary memory, which the driver
//     refuses with that flag, so the flag is taken off for softnic's UAR pages on its way to the
//     driver (platform_cuda.cpp), through dlsym and cuGetProcAddress as the CUDA runtime
//     reaches the driver;
//   - the emulated host's name: with SOFTNIC_HOST set, gethostname answers it, so that a
//     process standing for another node also looks like one to libraries that tell nodes apart
//     by host name (NVSHMEM, MPI libraries) (platform_host.cpp).
// Everything else passes through unchanged. It never refers to a profiler.
#pragma once
#include <cstddef>

namespace softnic::platform {

// glibc's own dlsym, whatever else interposes it (found through libc.so.6's handle).
using DlsymFn = void* (*)(void*, const char*);
DlsymFn libc_dlsym();
// The next definition of name after this library (RTLD_NEXT from here).
void* next_symbol(const char* name);

// The CUDA entry points this library stands in front of; found: what the real lookup gave.
// Returns the wrapper to hand out instead, or found.
void* cuda_substitute(const char* name, void* found, int version);

}  // namespace softnic::platform
