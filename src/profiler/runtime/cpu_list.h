// Linux CPU lists ("0-3,8,10-11"): the form sysfs writes (topology/thread_siblings_list) and the one
// users write for SIGMATRACE_DOORBELL_CPUS, as for taskset -c and mpirun --cpu-set. Control path.
#pragma once
#include <string>
#include <vector>

namespace sigmatrace::profiler {

// The CPUs of text in the order written, ranges expanded, into out; a trailing newline is allowed.
// false (out unspecified) for anything else: an empty list or item, a descending range, a CPU at or
// beyond CPU_SETSIZE (a poller could not be pinned there).
bool parse_cpu_list(const std::string& text, std::vector<int>* out);

}  // namespace sigmatrace::profiler
