// Interposed _exit and _Exit: a process that ends through them skips exit handlers, and so the
// profiler's final flush. Programs do that from their own signal handlers (a SIGTERM handler that
// cleans up and calls _exit, as servers and MPI runtimes do) and on abort paths; without this the
// last buffers and the end record were lost. exit() reaches the kernel through glibc's internal
// _exit, not through these, after the normal flush has run.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

#include "profiler/lifecycle/lifecycle.h"

namespace {
using ExitFn = void (*)(int);
// Resolved at load: dlsym is no business of a signal handler.
ExitFn g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
ExitFn g_real_Exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
}  // namespace

extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  sigmatrace::profiler::flush_before_underscore_exit();
  if (g_real_exit) g_real_exit(status);
  __builtin_trap();
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) {
  sigmatrace::profiler::flush_before_underscore_exit();
  if (g_real_Exit) g_real_Exit(status);
  else if (g_real_exit) g_real_exit(status);
  __builtin_trap();
}

}  // extern "C"
