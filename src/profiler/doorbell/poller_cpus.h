// Where a doorbell poller runs (docs/gpu-doorbells.md, "Where pollers run"): a CPU of
// SIGMATRACE_DOORBELL_CPUS, or else one outside the application thread's affinity mask, claimed
// against the pollers of the node's other processes (two spinning pollers on one core stall each
// other: measured). Control path only.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sigmatrace::profiler::doorbell {

struct PollerCpu {
  int cpu = -1;        // the CPU it is pinned to; -1: the application's CPUs
  bool shared = true;  // others may run there too: the poller yields instead of spinning when idle
  int claim = -1;      // the lock file that holds the CPU for it against the node's other pollers
};

// The CPU for a poller. With configured CPUs (SIGMATRACE_DOORBELL_CPUS): starting at slot (the
// process's local rank plus the poller's index), the first no other poller of the node holds.
// Without: the first of the CPUs outside the calling thread's affinity mask, in
// order_poller_cpus's order, that no other poller holds. When every one is held, the one at slot,
// shared. No CPU when there is none to choose from (the application may run everywhere).
PollerCpu choose_poller_cpu(const std::vector<int>& configured, size_t slot);
// Lets the CPU go: the poller, if it still runs, is on the application's CPUs.
void release_poller_cpu(PollerCpu* placement);

// The CPUs outside the application's (application[c]: it may run on CPU c), in the order pollers
// take them: first the CPUs of cores the application has no CPU on, one CPU of each such core
// before a second of any, then the CPUs that share a core with the application (the SMT sibling
// of a rank bound to one hardware thread: a spinning poller there takes issue slots from the rank).
// core_of[c] names CPU c's core (the first CPU of its sibling list).
std::vector<int> order_poller_cpus(const std::vector<bool>& application, const std::vector<int>& core_of);
// core_of for CPUs 0..cpus-1 from sysfs_root (normally /sys/devices/system/cpu): each CPU's
// topology/thread_siblings_list; a CPU whose list cannot be read is a core of its own.
std::vector<int> cores_of_cpus(int cpus, const std::string& sysfs_root);

}  // namespace sigmatrace::profiler::doorbell
