// `sigmatrace merge DIR`: makes the shards of an analysis (`sigmatrace analyze DIR --shard K/N`,
// written to DIR/shards/K-of-N) into DIR/trace.pftrace, DIR/trace.sqlite and DIR/aggregate.json,
// as one analysis of the whole experiment writes them, and prints the summary.
#include <sys/stat.h>

#include <cstdio>

#include "analysis_run/shard_merge.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "export/text_report.h"

namespace sigmatrace::cli {
namespace {

struct MergeOptions {
  std::string dir;
  unsigned threads = 0;
  bool quiet = false;
  size_t top = 10;
};

int run_merge(const MergeOptions& o) {
  struct stat st;
  if (stat(o.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    print_error("merge: " + o.dir + " is not an experiment directory (no such directory)");
    return 2;
  }
  analysis::Progress progress;
  exporter::MergeOptions mo;
  mo.dir = o.dir;
  mo.threads = o.threads;
  mo.progress = &progress;
  exporter::AnalysisRun run;
  {
    ProgressBar bar("merge", &progress);
    run = exporter::merge_shards(mo);
  }
  if (!run.ok) {
    print_error("merge: " + run.error);
    return 1;
  }
  if (!o.quiet) std::fputs(exporter::render_text_report(run.aggregate_json, o.top).c_str(), stdout);
  std::printf("\nmerged %llu shards into %s/%s in %.2f s (%zu files, %llu events)\n",
              static_cast<unsigned long long>(run.aggregate_json.value("merged_shards", 0)), o.dir.c_str(),
              exporter::output_list(run).c_str(),
              run.first_pass_s + run.outputs_s, run.model->processes.size(), static_cast<unsigned long long>(run.pass.events));
  return 0;
}

}  // namespace

CommandRunner add_merge_command(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand("merge", "merge the shards of an analysis (analyze --shard) into the experiment's outputs");
  sub->add_option("dir", o->dir, "experiment directory (its shards are in DIR/shards)")->required();
  sub->add_option("-j,--threads", o->threads, "worker threads (default: all cores)");
  sub->add_flag("-q,--quiet", o->quiet, "do not print the summary");
  sub->add_option("--top", o->top, "connections and QPs listed in the summary (default 10)");
  return [o] { return run_merge(*o); };
}

}  // namespace sigmatrace::cli
