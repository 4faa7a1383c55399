// The CUDA driver as the devx engine sees it: loaded with dlopen at run time, so softnic's
// libmlx5 loads and works without CUDA. Copies to and from GPU memory go through a stream of
// the engine's own (non-blocking, so they never wait for the application's kernels) and a
// pinned staging buffer per CUDA context.
#pragma once
#include <cstddef>
#include <cstdint>

namespace softnic::devx {

// Is p device memory? Sets *ctx to its CUDA context. false without CUDA.
bool cuda_is_device_pointer(const void* p, void** ctx);

// Synchronous (for the caller) copies on the engine's stream of ctx. Return false on failure.
bool cuda_read(void* ctx, void* dst, uint64_t src_dev, size_t len);
bool cuda_write(void* ctx, uint64_t dst_dev, const void* src, size_t len);

// Releases streams and staging buffers (engine thread exit).
void cuda_release();

}  // namespace softnic::devx
