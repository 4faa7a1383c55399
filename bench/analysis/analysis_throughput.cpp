// Analysis throughput on an experiment (bench/analysis/README in docs/performance.md):
// decode + clock normalization + topology + association + aggregation (no timeline or SQL export),
// for each worker count given, then optionally the complete analysis with all outputs.
//   analysis_throughput DIR [--threads 1,2,4] [--outputs] [--budget EVENTS] [--repeat R]
// Prints events/s and events/s per worker. The files should be in the page cache (run once before)
// so that the disk is not what is measured.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "analysis_run/analysis_run.h"

using sigmatrace::exporter::AnalysisOptions;
using sigmatrace::exporter::AnalysisRun;

namespace {
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Every event is decoded twice (first and second pass); throughput counts each event once.
// Per core: events per CPU second (independent of other load on the machine); wall: events per
// elapsed second with this many workers (scaling).
void report(const char* what, unsigned threads, const AnalysisRun& r, double cpu_s) {
  double total = r.first_pass_s + r.second_pass_s + r.outputs_s;
  double eps = static_cast<double>(r.pass.events) / total;
  std::printf("%-9s workers %2u: %11llu events, wall %7.3f s (pass1 %.3f, pass2 %.3f, outputs %.3f), cpu %7.3f s: "
              "%7.1f M events/s wall, %6.1f M events/s per CPU second\n",
              what, threads, static_cast<unsigned long long>(r.pass.events), total, r.first_pass_s, r.second_pass_s,
              r.outputs_s, cpu_s, eps / 1e6, static_cast<double>(r.pass.events) / cpu_s / 1e6);
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: analysis_throughput DIR [--threads 1,2,4] [--outputs] [--budget EVENTS] [--repeat R]\n");
    return 2;
  }
  std::string dir = argv[1];
  std::vector<unsigned> threads = {1, 2};
  bool outputs = false;
  int repeat = 3;
  uint64_t budget = 0;  // the timeline in full detail, so that every event is written (sigmatrace analyze: 10 M)
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      std::stringstream ss(argv[++i]);
      for (std::string t; std::getline(ss, t, ',');) threads.push_back(static_cast<unsigned>(std::stoul(t)));
    } else if (a == "--budget" && i + 1 < argc) {
      budget = std::stoull(argv[++i]);
    } else if (a == "--outputs") {
      outputs = true;
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::stoi(argv[++i]));
    } else {
      std::fprintf(stderr, "analysis_throughput: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  for (unsigned t : threads) {
    AnalysisRun best;
    double best_s = 1e300, best_cpu = 0;
    for (int k = 0; k < repeat; ++k) {
      double c0 = cpu_seconds();
      AnalysisOptions o;
      o.dir = dir;
      o.threads = t;
      o.perfetto = o.sqlite = false;
      o.json = false;
      AnalysisRun r = sigmatrace::exporter::run_analysis(o);
      if (!r.ok) {
        std::fprintf(stderr, "analysis_throughput: %s\n", r.error.c_str());
        return 1;
      }
      double cpu = cpu_seconds() - c0;
      double s = r.first_pass_s + r.second_pass_s + r.outputs_s;
      if (s < best_s) best_s = s, best_cpu = cpu, best = std::move(r);
    }
    report("core", t, best, best_cpu);
  }
  if (outputs) {
    AnalysisOptions o;
    o.dir = dir;
    o.threads = threads.back();
    o.timeline.budget_events = budget;
    double c0 = cpu_seconds();
    AnalysisRun r = sigmatrace::exporter::run_analysis(o);
    if (!r.ok) {
      std::fprintf(stderr, "analysis_throughput: %s\n", r.error.c_str());
      return 1;
    }
    report("+outputs", threads.back(), r, cpu_seconds() - c0);
    std::printf("trace.sqlite: %llu rows inserted by SQLite after the leaf pages (out of order beyond the sort window)\n",
                static_cast<unsigned long long>(r.sqlite_late_rows));
  }
  return 0;
}
