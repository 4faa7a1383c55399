// Entry points of the profiler's lifecycle used outside lifecycle.cpp.
#pragma once

namespace sigmatrace::profiler {
// The process is about to exec: write everything out and stop recording (the new image starts its
// own trace file if it is profiled).
void flush_before_exec();
}  // namespace sigmatrace::profiler
