// Entry points of the profiler's lifecycle. In libsigmatrace.so the preload constructor and
// destructor (preload_constructor.cpp) call start_runtime()/stop_runtime(); benchmarks that link
// the runtime statically call them themselves.
#pragma once
#include <string>

namespace sigmatrace::profiler {
// Reads the configuration from the environment and starts recording. False when the profiler is
// off (disabled, bad configuration, no output directory: the reason has been printed).
bool start_runtime();
// Writes everything out and stops recording (normal exit).
void stop_runtime();
// The process is about to exec: write everything out and stop recording. Returns the run id the
// new image must carry to join the same experiment ("" when this process was not recording).
std::string flush_before_exec();
// The process ends through _exit()/_Exit() (a signal handler of the program's own, an abort
// path): write what was recorded, as on a signal. Async-signal-safe.
void flush_before_underscore_exit();
}  // namespace sigmatrace::profiler
