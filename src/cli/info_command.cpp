// `sigmatrace info DIR`: what an experiment holds (processes, threads, event counts by type, drops,
// time span, damaged or skipped files), as text or --json. Exit status 1 when no file is usable.
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/experiment_scan.h"
#include "cli/commands.h"

namespace sigmatrace::cli {
namespace {

struct InfoOptions {
  std::string dir;
  bool json = false;
  unsigned threads = 0;
};

double span_seconds(const analysis::FileSummary& f) {
  if (!f.clock.valid || !f.first_tsc) return 0;
  return static_cast<double>(f.clock.to_realtime_ns(f.last_tsc) - f.clock.to_realtime_ns(f.first_tsc)) / 1e9;
}

std::string status_of(const analysis::FileSummary& f) {
  std::string s;
  if (!f.has_file_end) {
    s = "incomplete (no end record: killed or crashed)";
    if (uint64_t m = f.events_missing_at_least()) s += ", at least " + std::to_string(m) + " events missing";
  } else {
    s = std::string("ended by ") + analysis::exit_reason_name(f.end_exit_reason);
  }
  if (f.write_failure.failed)
    s += ", writes failed (" + f.write_failure.error + "): " + std::to_string(f.write_failure.events_lost) + " events lost";
  if (!f.losses.empty() || f.chunks_missing || f.undecodable_chunks) s += ", damaged";
  return s;
}

nlohmann::json to_json(const analysis::ExperimentSummary& es) {
  nlohmann::json j;
  j["dir"] = es.dir;
  j["skipped"] = es.skipped;
  for (const analysis::FileSummary& f : es.files) {
    if (!f.usable) continue;
    nlohmann::json p;
    p["file"] = f.path;
    for (const auto& [k, v] : f.meta) p["meta"][k] = v;
    p["format_version"] = std::to_string(f.version_major) + "." + std::to_string(f.version_minor);
    p["file_bytes"] = f.file_bytes;
    p["chunks"] = f.chunks;
    p["events"] = f.events;
    p["events_by_type"] = f.events_by_type;
    p["events_dropped"] = f.events_dropped();
    p["complete"] = f.has_file_end;
    p["status"] = status_of(f);
    p["events_missing_at_least"] = f.events_missing_at_least();
    if (f.write_failure.failed)
      p["write_failure"] = {{"error", f.write_failure.error},
                            {"file_bytes", f.write_failure.file_bytes},
                            {"chunks_lost", f.write_failure.chunks_lost},
                            {"events_lost", f.write_failure.events_lost}};
    p["exit_reason"] = f.has_file_end ? analysis::exit_reason_name(f.end_exit_reason) : "none";
    p["span_seconds"] = span_seconds(f);
    p["clock_samples"] = f.clock_samples.size();
    p["clock_fit_max_residual_ns"] = f.clock.max_residual_ns;
    p["chunks_missing"] = f.chunks_missing;
    p["undecodable_chunks"] = f.undecodable_chunks;
    for (const auto& l : f.losses) p["losses"].push_back({{"offset", l.offset}, {"bytes", l.bytes}, {"reason", l.reason}});
    for (const auto& [tid, t] : f.threads)
      p["threads"].push_back({{"tid", tid},
                              {"name", t.name},
                              {"events", t.events_in_file},
                              {"events_recorded", t.events_recorded},
                              {"events_dropped", t.events_dropped},
                              {"chunks_dropped", t.chunks_dropped},
                              {"events_recorded_at_last_progress", t.progress_recorded},
                              {"aggregate_overflow", t.aggregate_overflow}});
    for (const auto& pr : f.providers) p["providers"].push_back({{"name", pr.name}, {"enabled", pr.enabled}, {"detail", pr.detail}});
    j["processes"].push_back(p);
  }
  return j;
}

void print_text(const analysis::ExperimentSummary& es) {
  size_t usable = 0, threads = 0;
  uint64_t events = 0, dropped = 0;
  std::map<std::string, uint64_t> by_type;
  for (const auto& f : es.files) {
    if (!f.usable) continue;
    ++usable;
    threads += f.threads.size();
    events += f.events;
    dropped += f.events_dropped();
    for (const auto& [t, n] : f.events_by_type) by_type[t] += n;
  }
  std::printf("experiment %s: %zu processes, %zu threads, %" PRIu64 " events, %" PRIu64 " dropped\n", es.dir.c_str(), usable,
              threads, events, dropped);
  std::printf("\n%-20s %6s %8s %-14s %8s %12s %10s %9s  %s\n", "host", "rank", "pid", "program", "threads", "events",
              "dropped", "span_s", "status");
  for (const auto& f : es.files) {
    if (!f.usable) continue;
    std::string exe = f.meta_value("executable");
    exe = exe.substr(exe.find_last_of('/') + 1);
    std::printf("%-20s %6s %8s %-14s %8zu %12" PRIu64 " %10" PRIu64 " %9.3f  %s\n", f.meta_value("host").c_str(),
                std::to_string(f.rank()).c_str(), f.meta_value("pid").c_str(), exe.c_str(), f.threads.size(), f.events,
                f.events_dropped(), span_seconds(f), status_of(f).c_str());
  }
  std::printf("\nevents by type:\n");
  for (const auto& [t, n] : by_type) std::printf("  %-20s %12" PRIu64 "\n", t.c_str(), n);
  bool header = false;
  for (const auto& f : es.files) {
    if (!f.usable) continue;
    for (const auto& [tid, t] : f.threads) {
      uint64_t missing = !f.has_file_end && t.progress_recorded > t.events_in_file ? t.progress_recorded - t.events_in_file : 0;
      if (!t.events_dropped && !t.aggregate_overflow && !missing) continue;
      if (!header) std::printf("\ndrops:\n"), header = true;
      std::printf("  %s tid %u (%s): %" PRIu64 " events dropped (%" PRIu64 " chunks not written), %" PRIu64
                  " aggregate updates overflowed", f.path.c_str(), tid, t.name.c_str(), t.events_dropped, t.chunks_dropped,
                  t.aggregate_overflow);
      if (missing) std::printf(", at least %" PRIu64 " recorded events missing (killed before they were written)", missing);
      std::printf("\n");
    }
  }
  header = false;
  for (const auto& f : es.files) {
    if (!f.usable || (f.losses.empty() && !f.chunks_missing && !f.undecodable_chunks)) continue;
    if (!header) std::printf("\ndamaged files (intact chunks were read):\n"), header = true;
    std::printf("  %s: %zu damaged regions, %" PRIu64 " chunks missing, %" PRIu64 " chunks partly undecodable\n",
                f.path.c_str(), f.losses.size(), f.chunks_missing, f.undecodable_chunks);
    for (const auto& l : f.losses)
      std::printf("    at byte %" PRIu64 ": %" PRIu64 " bytes skipped: %s\n", l.offset, l.bytes, l.reason.c_str());
  }
  if (!es.skipped.empty()) {
    std::printf("\nskipped files (unusable):\n");
    for (const auto& s : es.skipped) std::printf("  %s\n", s.c_str());
  }
}

int run_info(const InfoOptions& o) {
  struct stat st;
  if (stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    print_error("info: " + o.dir + " is not an experiment directory (no such directory)");
    return 2;
  }
  if (access(o.dir.c_str(), R_OK | X_OK) != 0) {
    print_error("info: cannot read directory " + o.dir);
    return 2;
  }
  analysis::ExperimentSummary es = analysis::scan_experiment(o.dir, o.threads);
  if (es.files.empty()) {
    print_error("info: " + o.dir + " holds no trace files (*.sgt)");
    return 1;
  }
  if (o.json) std::printf("%s\n", to_json(es).dump(2).c_str());
  else print_text(es);
  return es.skipped.size() == es.files.size() ? 1 : 0;
}

}  // namespace

CommandRunner add_info_command(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* sub = app.add_subcommand("info", "summarise an experiment: processes, threads, events, drops, damage");
  sub->add_option("dir", o->dir, "experiment directory")->required();
  sub->add_flag("--json", o->json, "print JSON instead of text");
  sub->add_option("-j,--threads", o->threads, "reader threads (default: all cores)");
  return [o] { return run_info(*o); };
}

}  // namespace sigmatrace::cli
