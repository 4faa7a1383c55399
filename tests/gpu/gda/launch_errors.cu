// What the CUDA runtime tells a program about its launches must not change under the profiler,
// which names each kernel at its first launch (cudaFuncGetName for a host stub): the error a
// failed launch left, an error still pending from an earlier call, and success. Prints one line
// per case with cudaGetLastError's answer; run untraced and traced, the outputs must be equal.
// Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void add_one(int* p) { p[threadIdx.x] += 1; }

namespace {

void report(const char* what, cudaError_t launch) {
  const cudaError_t last = cudaGetLastError();
  printf("%s: launch %s, last error %s\n", what, cudaGetErrorName(launch), cudaGetErrorName(last));
}

cudaError_t launch(const void* f, unsigned threads, int* arg) {
  void* args[] = {&arg};
  return cudaLaunchKernel(f, dim3(1), dim3(threads), args, 0, nullptr);
}

}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("launch_errors: skipped: no CUDA device\n");
    return 77;
  }
  int* d = nullptr;
  if (cudaMalloc(&d, 64 * sizeof(int)) != cudaSuccess) return 1;
  cudaMemset(d, 0, 64 * sizeof(int));
  const void* kernel = reinterpret_cast<const void*>(&add_one);
  static const char not_a_kernel[16] = {};

  // Failed launches first: the kernel has not been named yet when they happen.
  report("not a kernel", launch(not_a_kernel, 32, d));
  report("too many threads", launch(kernel, 4096, d));
  // An error pending from an earlier call, then a launch that succeeds.
  void* huge = nullptr;
  const cudaError_t alloc = cudaMalloc(&huge, size_t(1) << 60);
  const cudaError_t ok = launch(kernel, 32, d);
  printf("pending %s, then a launch: ", cudaGetErrorName(alloc));
  report("valid", ok);
  report("valid again", launch(kernel, 32, d));
  report("synchronize", cudaDeviceSynchronize());
  int h[64];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("result: %d (the two valid launches)\n", h[0]);
  cudaFree(d);
  return h[0] == 2 ? 0 : 1;
}
