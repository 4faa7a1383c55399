// `sigmatrace diff A B`: what changed from experiment A (the baseline) to B, from their
// aggregate.json (both analysed): the changes above the noise threshold, ranked by the time each
// explains, as text or JSON (docs/diff.md). `sigmatrace report B --html --baseline A` draws them.
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/aggregate_file.h"

namespace sigmatrace::cli {
namespace {

struct DiffCommandOptions {
  std::string baseline, experiment;
  compare::DiffOptions diff;
  bool json = false;
  size_t top = 25;
};

int run_diff(const DiffCommandOptions& o) {
  nlohmann::json a, b;
  if (!read_aggregate("diff", o.baseline, &a) || !read_aggregate("diff", o.experiment, &b)) return 1;
  nlohmann::json d;
  if (!diff_aggregates("diff", a, b, o.diff, &d)) return 1;
  if (o.json) std::printf("%s\n", d.dump(2).c_str());
  else std::fputs(compare::render_diff_text(d, o.top).c_str(), stdout);
  return 0;
}

}  // namespace

CommandRunner add_diff_command(CLI::App& app) {
  auto o = std::make_shared<DiffCommandOptions>();
  CLI::App* sub = app.add_subcommand("diff", "what changed between two analysed experiments, ranked by the time it explains");
  sub->add_option("baseline", o->baseline, "the experiment compared against (analysed)")->required();
  sub->add_option("experiment", o->experiment, "the experiment compared (analysed)")->required();
  sub->add_option("--threshold", o->diff.threshold_percent, "smallest change of a row's durations (their geometric mean) reported, in percent (default 25)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--count-threshold", o->diff.count_threshold_percent,
                  "smallest change of a count or byte total reported, in percent (default 5)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--min-z", o->diff.min_z, "a change of durations must also be this many standard errors of their mean logarithm (default 3)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_flag("--json", o->json, "print the diff as JSON");
  sub->add_option("--top", o->top, "changes listed (default 25)");
  return [o] { return run_diff(*o); };
}

}  // namespace sigmatrace::cli
