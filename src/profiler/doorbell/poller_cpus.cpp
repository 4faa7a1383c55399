#include "profiler/doorbell/poller_cpus.h"

#include "profiler/runtime/cpu_list.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

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
// calling (application) thread's affinity mask, whole free cores first (order_poller_cpus), so
// that a core-bound rank never shares its core with a spinning poller. Empty when the application
// may run everywhere.
std::vector<int> cpus_outside_the_application() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return {};
  const int online = int(std::min<long>(sysconf(_SC_NPROCESSORS_ONLN), CPU_SETSIZE));
  if (online <= 0) return {};
  std::vector<bool> application(size_t(online), false);
  for (int c = 0; c < online; ++c) application[size_t(c)] = CPU_ISSET(c, &mine);
  return order_poller_cpus(application, cores_of_cpus(online, "/sys/devices/system/cpu"));
}

}  // namespace

std::vector<int> cores_of_cpus(int cpus, const std::string& sysfs_root) {
  std::vector<int> core_of(size_t(std::max(cpus, 0)));
  for (int c = 0; c < cpus; ++c) {
    core_of[size_t(c)] = c;
    const std::string path = sysfs_root + "/cpu" + std::to_string(c) + "/topology/thread_siblings_list";
    FILE* f = fopen(path.c_str(), "re");
    if (!f) continue;
    char line[1024] = {};
    const bool read = fgets(line, sizeof line, f) != nullptr;
    fclose(f);
    std::vector<int> siblings;
    if (read && parse_cpu_list(line, &siblings)) core_of[size_t(c)] = siblings.front();
  }
  return core_of;
}

std::vector<int> order_poller_cpus(const std::vector<bool>& application, const std::vector<int>& core_of) {
  const size_t n = std::min(application.size(), core_of.size());
  std::set<int> application_cores;
  for (size_t c = 0; c < n; ++c)
    if (application[c]) application_cores.insert(core_of[c]);
  // Rank each CPU outside the application by (shares a core with it, how many of its own core's
  // CPUs come before it): whole free cores' first CPUs, then their second CPUs, ..., then the rest.
  std::vector<std::pair<std::pair<bool, int>, int>> ranked;
  std::map<int, int> taken_of_core;
  for (size_t c = 0; c < n; ++c) {
    if (application[c]) continue;
    const bool shares = application_cores.count(core_of[c]) != 0;
    ranked.push_back({{shares, taken_of_core[core_of[c]]++}, int(c)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> out;
  for (const auto& r : ranked) out.push_back(r.second);
  return out;
}

PollerCpu choose_poller_cpu(const std::vector<int>& configured, size_t slot) {
  const std::vector<int> outside = configured.empty() ? cpus_outside_the_application() : std::vector<int>{};
  const std::vector<int>& choice = configured.empty() ? outside : configured;
  PollerCpu c;
  if (choice.empty()) return c;
  // A configured list is shared out by local rank; CPUs of the machine's own choosing are taken
  // best first, whoever asks.
  const size_t start = configured.empty() ? 0 : slot % choice.size();
  c.cpu = choice[slot % choice.size()];
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
