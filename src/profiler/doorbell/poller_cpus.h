// Where a doorbell poller runs (docs/gpu-doorbells.md, "Where pollers run"): a CPU of
// SIGMATRACE_DOORBELL_CPUS, or else one outside the application thread's affinity mask, claimed
// against the pollers of the node's other processes (two spinning pollers on one core stall each
// other: measured). Control path only.
#pragma once
#include <cstddef>
#include <vector>

namespace sigmatrace::profiler::doorbell {

struct PollerCpu {
  int cpu = -1;        // the CPU it is pinned to; -1: the application's CPUs
  bool shared = true;  // others may run there too: the poller yields instead of spinning when idle
  int claim = -1;      // the lock file that holds the CPU for it against the node's other pollers
};

// The CPU for a poller: starting at slot (the process's local rank plus the poller's index) in
// configured (or, empty, in the CPUs outside the calling thread's affinity mask), the first no
// other poller of the node holds; when every one is held, that share itself, shared. No CPU when
// there is none to choose from (the application may run everywhere).
PollerCpu choose_poller_cpu(const std::vector<int>& configured, size_t slot);
// Lets the CPU go: the poller, if it still runs, is on the application's CPUs.
void release_poller_cpu(PollerCpu* placement);

}  // namespace sigmatrace::profiler::doorbell
