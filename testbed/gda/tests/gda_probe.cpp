// Exit 0 when a CUDA device is usable, else print why and exit 77 (ctest SKIP_RETURN_CODE).
#include <cuda.h>

#include <cstdio>

int main() {
  const char* why = nullptr;
  CUresult r = cuInit(0);
  int n = 0;
  if (r != CUDA_SUCCESS) {
    cuGetErrorString(r, &why);
  } else if (cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
    why = "cuDeviceGetCount found no device";
  }
  if (why) {
    printf("skipped: no CUDA device (%s)\n", why ? why : "unknown");
    return 77;
  }
  printf("CUDA devices: %d\n", n);
  return 0;
}
