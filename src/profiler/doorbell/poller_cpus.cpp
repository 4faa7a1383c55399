#include "profiler/doorbell/poller_cpus.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>

namespace sigmatrace::profiler::doorbell {

namespace {

// A CPU held for one poller against the pollers of the node's other processes (two spinning
// pollers on one core stall each other: measured, docs/gpu-doorbells.md): an flock on a file per
// CPU in /dev/shm, released when the poller stops or the process ends.
bool claim_cpu(int cpu, int* fd) {
  char path[96];
  snprintf(path, sizeof path, "/dev/shm/sigmatrace-poller-cpu-%u-%d.lock", unsigned(getuid()), cpu);
  const int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (f < 0) return false;
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    close(f);
    return false;
  }
  *fd = f;
  return true;
}
void release_cpu(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// The CPUs a poller may take when SIGMATRACE_DOORBELL_CPUS names none: those outside the
// calling (application) thread's affinity mask, so that a core-bound rank never shares its core
// with a spinning poller. Empty when the application may run everywhere.
std::vector<int> cpus_outside_the_application() {
  std::vector<int> out;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return out;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < online && c < CPU_SETSIZE; ++c)
    if (!CPU_ISSET(c, &mine)) out.push_back(c);
  return out;
}

}  // namespace

PollerCpu choose_poller_cpu(const std::vector<int>& configured, size_t slot) {
  const std::vector<int> outside = configured.empty() ? cpus_outside_the_application() : std::vector<int>{};
  const std::vector<int>& choice = configured.empty() ? outside : configured;
  PollerCpu c;
  if (choice.empty()) return c;
  const size_t start = slot % choice.size();
  c.cpu = choice[start];
  for (size_t k = 0; k < choice.size(); ++k)
    if (claim_cpu(choice[(start + k) % choice.size()], &c.claim)) {
      c.cpu = choice[(start + k) % choice.size()];
      c.shared = false;
      break;
    }
  return c;
}

void release_poller_cpu(PollerCpu* c) {
  release_cpu(&c->claim);
  c->cpu = -1;
  c->shared = true;
}

}  // namespace sigmatrace::profiler::doorbell
