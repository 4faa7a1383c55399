// softnic's one way into the CUDA driver, shared by the verbs responder (libibverbs) and the
// devx engine (libmlx5). libcuda.so.1 is loaded with dlopen at run time, so softnic builds and
// runs without CUDA. Every driver result is checked: a failed call returns false and prints one
// line naming the call, its CUresult and the copy.
//
// Copies go through a non-blocking stream and a pinned staging buffer that belong to the
// calling thread (per CUDA context), so they never wait for the application's kernels or
// streams, the engines' threads never contend for one stream, and a copy has landed in its
// destination when the call returns (a NIC writes data before it acknowledges it).
// The caller must not hold locks that an application thread needs while a kernel spins: a copy
// can wait behind the GPU.
//
// A copy must never wait for the application's kernels, and streams that the driver maps onto
// the same hardware work queue as a spinning kernel's stream do (under MPS a client's streams
// share a small pool of queues). Unless the environment says otherwise, softnic therefore asks
// for CUDA_DEVICE_MAX_CONNECTIONS=4 when its library is loaded, before CUDA is initialised
// (SOFTNIC_CUDA_CONNECTIONS=N asks for N; 0 leaves the driver's default). Measured on an H200
// under MPS (docs/gda.md): with the default or 2, a responder's copy waited behind the peer's
// spinning kernel; 8 and 16 left too few queues in MPS's shared pool for ten processes (setup
// failures, or queues silently shared again); 4 passed with ten processes side by side.
// It lives in softnic's libibverbs and reaches libmlx5 through the private version node
// SOFTNIC_PRIVATE_1 (as rdma-core's providers import libibverbs' IBVERBS_PRIVATE_* symbols), so
// the process has one loader, one set of statistics and one in-flight record.
#pragma once
#include <cstddef>
#include <cstdint>

#include "private_api.hpp"

namespace softnic::cuda {

// Is p device memory? Sets *ctx to the CUDA context that owns it. false without CUDA.
SOFTNIC_PRIVATE_API bool is_device_pointer(const void* p, void** ctx);

// Copies between GPU memory of context ctx and host memory; false (and one line) on failure.
SOFTNIC_PRIVATE_API bool read(void* ctx, void* dst, uint64_t src_dev, size_t len);
SOFTNIC_PRIVATE_API bool write(void* ctx, uint64_t dst_dev, const void* src, size_t len);

// Destroys the calling thread's streams and staging buffers (an engine thread that exits).
SOFTNIC_PRIVATE_API void release_thread();

// Copy statistics of the calling process (all threads), for the engines' timing summaries.
struct CopyStats {
  uint64_t reads, writes;        // calls
  uint64_t read_ns, write_ns;    // wall time inside them
  uint64_t read_max_ns, write_max_ns;
  uint64_t failures;
};
SOFTNIC_PRIVATE_API CopyStats copy_stats();

// Like write, for a small buffer (at most kAsyncWriteMaxBytes) whose landing nobody on the host
// waits for (a CQE the GPU polls): queued behind the thread's earlier copies, returns without
// waiting. Later copies of the thread, and read(), are ordered after it.
constexpr size_t kAsyncWriteMaxBytes = 256;
SOFTNIC_PRIVATE_API bool write_async(void* ctx, uint64_t dst_dev, const void* src, size_t len);

// The copies in flight now, for state dumps taken while a copy hangs (one per thread at most).
struct InFlight {
  long tid;             // the copying thread
  uint64_t since_ns;    // CLOCK_MONOTONIC when it started
  uint64_t dev_addr;
  uint64_t len;
  bool is_read;
};
SOFTNIC_PRIVATE_API int copies_in_flight(InFlight* out, int max);

}  // namespace softnic::cuda
