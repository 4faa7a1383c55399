// The emulated host's name (platform.hpp). (CUDA_DEVICE_MAX_CONNECTIONS, which softnic's copies
// need set before CUDA starts, is set by softnic's libibverbs, which this library loads at start.)
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "platform/platform.hpp"

// With SOFTNIC_HOST set, the process stands for that host: its name is the host's.
extern "C" __attribute__((visibility("default"))) int gethostname(char* name, size_t len) noexcept {
  const char* host = getenv("SOFTNIC_HOST");
  if (!host || !*host) {
    static auto fn = reinterpret_cast<int (*)(char*, size_t)>(softnic::platform::next_symbol("gethostname"));
    return fn ? fn(name, len) : -1;
  }
  size_t n = strlen(host);
  if (n + 1 > len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(name, host, n + 1);
  return 0;
}
