// Exit 0 when a CUDA device is usable, else print why and exit 77 (ctest SKIP_RETURN_CODE).
// libcuda is loaded with dlopen, so this also runs (and skips) where no driver is installed.
#include <dlfcn.h>

#include <cstdio>

int main() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("skipped: no CUDA device (libcuda.so.1 cannot be loaded: %s)\n", dlerror());
    return 77;
  }
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(h, "cuDeviceGetCount"));
  auto errstr = reinterpret_cast<int (*)(int, const char**)>(dlsym(h, "cuGetErrorString"));
  if (!init || !count) {
    printf("skipped: no CUDA device (libcuda.so.1 lacks cuInit/cuDeviceGetCount)\n");
    return 77;
  }
  int r = init(0);
  if (r != 0) {
    const char* s = nullptr;
    if (errstr) errstr(r, &s);
    printf("skipped: no CUDA device (cuInit failed: %s)\n", s ? s : "unknown error");
    return 77;
  }
  int n = 0;
  if (count(&n) != 0 || n == 0) {
    printf("skipped: no CUDA device (cuDeviceGetCount found none)\n");
    return 77;
  }
  printf("CUDA devices: %d\n", n);
  return 0;
}
