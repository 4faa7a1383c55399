// Probes the process for libraries the way some programs do before using them
// (dlsym(RTLD_DEFAULT, ...)): under the profiler the answers must be the same as without it,
// even though libsigmatrace.so exports shims of these names.
#include <dlfcn.h>

#include <cstdio>

int main() {
  const char* names[] = {"MPI_Init", "MPI_Init_thread", "ibv_open_device", "ibv_get_device_list", "mlx5dv_open_device",
                         "ucp_init_version", "ucp_put_nbx", "fi_getinfo", "fi_fabric", "printf"};
  for (const char* n : names) std::printf("%s %s\n", n, dlsym(RTLD_DEFAULT, n) ? "present" : "absent");
  std::printf("ibv_get_device_list@IBVERBS_1.1 %s\n",
              dlvsym(RTLD_DEFAULT, "ibv_get_device_list", "IBVERBS_1.1") ? "present" : "absent");
  return 0;
}
