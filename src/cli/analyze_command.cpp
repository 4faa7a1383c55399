// `sigmatrace analyze DIR`: the post-mortem analysis. Reads every trace file of the experiment in
// parallel (streaming), writes DIR/trace.pftrace, DIR/trace.sqlite and DIR/aggregate.json, and
// prints the summary (the same as `sigmatrace report`). A progress bar is drawn on a terminal only.
// Damaged or unusable files are analysed as far as they are intact and reported; the exit status is
// 1 only when nothing usable remains (or an output cannot be written), 2 for bad usage.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#ifdef SIGMATRACE_HAVE_OTF2
#include "export/otf2_export.h"
#endif
#include "analysis_run/analysis_run.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "export/text_report.h"
#include "format/experiment_layout.h"

namespace sigmatrace::cli {
namespace {

struct AnalyzeOptions {
  std::string dir;
  unsigned threads = 0;
  bool no_perfetto = false, no_sqlite = false, quiet = false, plain_perfetto = false, otf2 = false;
  std::string window, ranks, hosts, layers, shard, clock_sync = "auto";
  uint64_t budget = exporter::TimelineRequest{}.budget_events;
  size_t top = 10;
};

int run_analyze(const AnalyzeOptions& o) {
  struct stat st;
  if (stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    print_error("analyze: " + o.dir + " is not an experiment directory (no such directory)");
    return 2;
  }
  if (format::experiment_is_live(o.dir))
    std::fprintf(stderr, "sigmatrace: analyze: %s is still being recorded; analysing what is written so far\n", o.dir.c_str());
  if (o.otf2 && o.no_sqlite) {
    print_error("analyze: --otf2 is written from trace.sqlite: leave out --no-sqlite");
    return 2;
  }
#ifndef SIGMATRACE_HAVE_OTF2
  if (o.otf2) {
    print_error("analyze: --otf2: this sigmatrace was built without OTF2 (install libotf2-trace-dev and rebuild)");
    return 2;
  }
#endif
  analysis::Progress progress;
  exporter::AnalysisOptions ao;
  ao.dir = o.dir;
  ao.threads = o.threads;
  ao.perfetto = !o.no_perfetto;
  ao.sqlite = !o.no_sqlite;
  ao.compress_perfetto = !o.plain_perfetto;
  ao.timeline.budget_events = o.budget;
  if (!o.window.empty() && !exporter::parse_time_window(o.window, &ao.timeline)) {
    print_error("analyze: --window " + o.window + ": expected FROM:TO in seconds since the experiment's start (either may be left out)");
    return 2;
  }
  if (!o.ranks.empty() && !exporter::parse_rank_list(o.ranks, &ao.timeline.ranks)) {
    print_error("analyze: --ranks " + o.ranks + ": expected a list such as 0,2,4-7");
    return 2;
  }
  for (auto [list, out] : {std::pair{&o.hosts, &ao.timeline.hosts}, std::pair{&o.layers, &ao.timeline.layers}}) {
    std::stringstream ss(*list);
    for (std::string item; std::getline(ss, item, ',');)
      if (!item.empty()) out->push_back(item);
  }
  std::string error;
  if (!o.shard.empty() && !exporter::parse_shard_spec(o.shard, &ao.shard, &error)) {
    print_error("analyze: " + error);
    return 2;
  }
  if (!analysis::parse_clock_sync_mode(o.clock_sync, &ao.clock_sync)) {
    print_error("analyze: --clock-sync " + o.clock_sync + ": expected auto, on or off");
    return 2;
  }
  ao.progress = &progress;
  exporter::AnalysisRun run;
  {
    ProgressBar bar("analyze", &progress);
    run = exporter::run_analysis(ao);
  }
  if (!run.ok) {
    print_error("analyze: " + run.error);
    return 1;
  }
  if (ao.shard.active()) {
    // A shard's summary would be a part's: the merge prints the whole.
    std::string hosts;
    for (const std::string& h : run.shard_hosts) hosts += (hosts.empty() ? "" : ",") + h;
    std::printf("wrote %s (shard %u of %u: hosts %s, %llu events) in %.2f s; when every shard is written: sigmatrace merge %s\n",
                run.output_dir.c_str(), ao.shard.index, ao.shard.count, hosts.c_str(), static_cast<unsigned long long>(run.pass.events),
                run.first_pass_s + run.second_pass_s + run.outputs_s, o.dir.c_str());
    return 0;
  }
  if (!o.quiet) std::fputs(exporter::render_text_report(run.aggregate_json, o.top).c_str(), stdout);
  double total = run.first_pass_s + run.second_pass_s + run.outputs_s;
  std::printf("\nwrote %s/%s in %.2f s (%zu files, %llu events)\n", o.dir.c_str(), exporter::output_list(run).c_str(), total,
              run.model->processes.size(), static_cast<unsigned long long>(run.pass.events));
  if (run.sqlite_left_out) std::printf("trace.sqlite not written: this sigmatrace was built without SQLite's library (libsqlite3-0)\n");
#ifdef SIGMATRACE_HAVE_OTF2
  if (o.otf2) {
    exporter::Otf2Counts c;
    if (!exporter::write_otf2(o.dir, &c, &error)) {
      print_error("analyze: " + error);
      return 1;
    }
    std::printf("wrote %s/otf2/traces.otf2: %llu locations, %llu RMA operations (%llu completed), %llu messages sent (%llu completed), "
                "%llu receives (%llu completed), %llu NVTX and %llu NCCL regions\n",
                o.dir.c_str(), static_cast<unsigned long long>(c.locations), static_cast<unsigned long long>(c.puts + c.gets + c.atomics),
                static_cast<unsigned long long>(c.rma_completions), static_cast<unsigned long long>(c.sends),
                static_cast<unsigned long long>(c.send_completions), static_cast<unsigned long long>(c.receive_requests),
                static_cast<unsigned long long>(c.receives), static_cast<unsigned long long>(c.range_regions),
                static_cast<unsigned long long>(c.nccl_regions));
  }
#endif
  return 0;
}

}  // namespace

CommandRunner add_analyze_command(CLI::App& app) {
  auto o = std::make_shared<AnalyzeOptions>();
  CLI::App* sub = app.add_subcommand("analyze", "analyse an experiment: trace.pftrace (Perfetto), trace.sqlite, aggregate.json");
  sub->add_option("dir", o->dir, "experiment directory")->required();
  sub->add_option("-j,--threads", o->threads, "worker threads (default: all cores)");
  sub->add_flag("--no-perfetto", o->no_perfetto, "do not write trace.pftrace");
  sub->add_flag("--no-sqlite", o->no_sqlite, "do not write trace.sqlite");
  sub->add_flag("--otf2", o->otf2, "also write DIR/otf2/traces.otf2 (OTF2, for Vampir and Scalasca; docs/otf2.md)");
  sub->add_flag("--uncompressed-perfetto", o->plain_perfetto,
                "write trace.pftrace's packets plain instead of in deflate-compressed blocks (for protoc --decode; several times larger)");
  sub->add_option("--window", o->window, "timeline only: FROM:TO, seconds since the experiment's start (e.g. 2.5:3)");
  sub->add_option("--ranks", o->ranks, "timeline only: these ranks (e.g. 0,4-7)");
  sub->add_option("--hosts", o->hosts, "timeline only: the processes of these hosts (comma-separated)");
  sub->add_option("--layers", o->layers, "timeline only: these layers (ibv,gpu,ucx,ofi)");
  sub->add_option("--timeline-budget", o->budget,
                  "events drawn one by one in trace.pftrace before counters take over (default 10000000, about 250 MB; 0: no limit)");
  sub->add_option("--shard", o->shard,
                  "analyse one group of hosts, K of N (from 0), into DIR/shards/K-of-N; 'mpi': K and N from the MPI launcher's rank "
                  "and size. Merge them with sigmatrace merge DIR");
  sub->add_option("--clock-sync", o->clock_sync,
                  "hosts' clocks set to agree from the messages between them: auto (when they disagree; default), on, off");
  sub->add_flag("-q,--quiet", o->quiet, "do not print the summary");
  sub->add_option("--top", o->top, "connections and QPs listed in the summary (default 10)");
  return [o] { return run_analyze(*o); };
}

}  // namespace sigmatrace::cli
