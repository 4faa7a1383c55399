// Loads the library named by argv[1] with dlopen, as a set-user-ID program that uses a plugin
// would: its constructors run in a secure-execution process (the glibc loader ignores LD_PRELOAD
// paths there, but a dlopen'ed or system-wide preloaded profiler still starts).
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: secure_probe LIBRARY\n");
    return 2;
  }
  if (!dlopen(argv[1], RTLD_NOW)) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  std::printf("loaded\n");
  return 0;
}
