// How fast one CPU runs a fixed chain of dependent multiply-adds while other CPUs spin: whether a
// busy CPU (a spinning doorbell poller, a busy loop) slows the others down on this host, as a
// shared turbo budget or SMT siblings hidden by a hypervisor would. bench/cpu_speed_under_load.sh
// runs it under several loads; results in docs/performance.md.
//   cpu_speed_under_load measure CPU SECONDS   ns per iteration: median, p10, p90 of ~0.25 ms samples
//   cpu_speed_under_load spin pause|busy        spins until killed (pause: one pause per round, as a poller)
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

int usage() {
  fprintf(stderr, "usage: cpu_speed_under_load measure CPU SECONDS | spin pause|busy\n");
  return 2;
}

[[noreturn]] void spin(bool pause) {
  volatile uint64_t rounds = 0;
  for (;;) {
    if (pause) __builtin_ia32_pause();
    rounds = rounds + 1;
  }
}

int measure(int cpu, double seconds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    fprintf(stderr, "cpu_speed_under_load: cannot run on CPU %d\n", cpu);
    return 1;
  }
  constexpr int kChain = 200000;
  std::vector<double> ns_per_iteration;
  uint64_t x = 12345;
  const uint64_t end = now_ns() + uint64_t(seconds * 1e9);
  while (now_ns() < end) {
    const uint64_t t0 = now_ns();
    for (int i = 0; i < kChain; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    ns_per_iteration.push_back(double(now_ns() - t0) / kChain);
  }
  if (ns_per_iteration.empty()) return usage();
  std::sort(ns_per_iteration.begin(), ns_per_iteration.end());
  const size_t n = ns_per_iteration.size();
  printf("%.4f %.4f %.4f %zu %llu\n", ns_per_iteration[n / 2], ns_per_iteration[n / 10], ns_per_iteration[n * 9 / 10], n,
         (unsigned long long)(x & 1));  // x printed so that the chain is not optimised away
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && !strcmp(argv[1], "spin") && (!strcmp(argv[2], "pause") || !strcmp(argv[2], "busy")))
    spin(!strcmp(argv[2], "pause"));
  if (argc == 4 && !strcmp(argv[1], "measure")) {
    char* end = nullptr;
    const long cpu = strtol(argv[2], &end, 10);
    if (*end || cpu < 0 || cpu >= CPU_SETSIZE) return usage();
    const double seconds = strtod(argv[3], &end);
    if (*end || seconds <= 0 || seconds > 3600) return usage();
    return measure(int(cpu), seconds);
  }
  return usage();
}
