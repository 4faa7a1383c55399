// softnic's one way into the CUDA driver, shared by the verbs responder (libibverbs) and the
// devx engine (libmlx5). libcuda.so.1 is loaded with dlopen at run time, so softnic builds and
// runs without CUDA. Every driver result is checked: a failed call returns false and prints one
// line naming the call, its CUresult and the copy.
//
// Copies go through a non-blocking stream and pinned staging buffers of softnic's own, so they
// never wait for the application's streams.
// The caller must not hold locks that an application thread needs while a kernel spins: a copy
// can wait behind the GPU.
//
// A copy must never wait for the application's kernels, and streams that the driver maps onto
// the same hardware work queue as a spinning kernel's stream do (under MPS a client's streams
// share a small pool of queues), so softnic uses one stream per context, and unless the
// environment says otherwise, softnic therefore asks
// for CUDA_DEVICE_MAX_CONNECTIONS=4 when its library is loaded, before CUDA is initialised
// (SOFTNIC_CUDA_CONNECTIONS=N asks for N; 0 leaves the driver's default). Measured on an H200
// under MPS (docs/gda.md): with the default or 2, a responder's copy waited behind the peer's
// spinning kernel; 8 and 16 left too few queues in MPS's shared pool for ten processes (setup
// failures, or queues silently shared again); with 4 no copy waited behind a kernel again.
// It lives in softnic's libibverbs and reaches libmlx5 through the private version node
// SOFTNIC_PRIVATE_1 (as rdma-core's providers import libibverbs' IBVERBS_PRIVATE_* symbols), so
// the process has one loader, one set of statistics and one in-flight record.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/private_api.hpp"

namespace softnic::cuda {

// Is p device memory? Sets *ctx to the CUDA context that owns it. false without CUDA.
SOFTNIC_PRIVATE_API bool is_device_pointer(const void* p, void** ctx);

// Copies between GPU memory of context ctx and host memory, all on one stream per context and
// executed in the order they are issued, whichever thread issues them: read, and a write that
// is not posted, return once they (and everything issued before them) have landed. A posted
// write is queued and not waited for: the devx engine posts CQEs, which nothing on the host
// waits for. The verbs responder waits for its writes (data placed, then acknowledged):
// posting them too, as a NIC's DMA is posted, brought Put+Quiet from 28-32 to 22-27 us on the
// H200; it is left out until the side-by-side failure of docs/gda.md ("Open") is understood.
// false (and one line) on failure.
SOFTNIC_PRIVATE_API bool read(void* ctx, void* dst, uint64_t src_dev, size_t len);
SOFTNIC_PRIVATE_API bool write(void* ctx, uint64_t dst_dev, const void* src, size_t len, bool posted);

// When the oldest posted write that has not landed was queued (CLOCK_MONOTONIC ns), 0 if none:
// a posted write that never lands is a stream stuck behind a kernel. For state dumps.
SOFTNIC_PRIVATE_API uint64_t oldest_unlanded_post_ns();

// Copy statistics of the calling process (all threads), for the engines' timing summaries.
struct CopyStats {
  uint64_t reads, writes;        // calls
  uint64_t read_ns, write_ns;    // wall time inside them
  uint64_t read_max_ns, write_max_ns;
  uint64_t failures;
};
SOFTNIC_PRIVATE_API CopyStats copy_stats();

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
