// Writes a large synthetic experiment (many processes, threads and QPs; tens of millions of events)
// for the analysis benchmarks, exactly as the profiler would write it.
//   analysis_generate DIR [--processes N] [--hosts H] [--threads T] [--qps-per-pair Q]
//                         [--messages M] [--all-to-all] [--simple] [-j JOBS]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "analysis/synthetic_experiment.h"

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr,
                 "usage: analysis_generate DIR [--processes N] [--hosts H] [--threads T] [--qps-per-pair Q] "
                 "[--messages M] [--all-to-all] [--simple] [-j JOBS]\n");
    return 2;
  }
  sigmatrace::analysis::SyntheticSpec s;
  s.processes = 64;
  s.hosts = 8;
  s.threads_per_process = 4;
  s.qps_per_pair = 4;
  s.messages_per_qp = 20000;
  s.message_period_ns = 2000;
  s.chunk_bytes = 256 * 1024;
  s.generator_threads = 2;
  std::string dir = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> long {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "analysis_generate: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::stol(argv[++i]);
    };
    if (a == "--processes") s.processes = static_cast<int>(next());
    else if (a == "--hosts") s.hosts = static_cast<int>(next());
    else if (a == "--threads") s.threads_per_process = static_cast<int>(next());
    else if (a == "--qps-per-pair") s.qps_per_pair = static_cast<int>(next());
    else if (a == "--messages") s.messages_per_qp = static_cast<int>(next());
    else if (a == "--all-to-all") s.all_to_all = true;
    else if (a == "--simple") s.full_mode = false;
    else if (a == "-j") s.generator_threads = static_cast<unsigned>(next());
    else {
      std::fprintf(stderr, "analysis_generate: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  sigmatrace::analysis::SyntheticTruth t = sigmatrace::analysis::write_synthetic_experiment(dir, s);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (t.files.empty()) {
    std::fprintf(stderr, "analysis_generate: cannot write %s\n", dir.c_str());
    return 1;
  }
  std::printf("%s: %d processes, %d hosts, %llu QPs, %llu events (%llu flows) in %.1f s\n", dir.c_str(), s.processes, s.hosts,
              static_cast<unsigned long long>(t.qps), static_cast<unsigned long long>(t.events),
              static_cast<unsigned long long>(t.flows), secs);
  return 0;
}
