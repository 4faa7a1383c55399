// What makes libsigmatrace.so start by itself when preloaded: a constructor that runs before the
// program's own, and a destructor that writes everything out at normal exit. Kept out of the static
// runtime library so that benchmarks can start the runtime when they choose.
#include "profiler/lifecycle/lifecycle.h"

namespace {
__attribute__((constructor(101))) void sigmatrace_preload_start() { sigmatrace::profiler::start_runtime(); }
__attribute__((destructor(101))) void sigmatrace_preload_stop() { sigmatrace::profiler::stop_runtime(); }
}  // namespace
