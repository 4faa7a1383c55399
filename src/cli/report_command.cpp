// `sigmatrace report DIR`: prints the summary of an analysed experiment (the one `analyze` prints)
// from DIR/aggregate.json, or that JSON itself with --json.
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "export/analysis_run.h"
#include "export/text_report.h"

namespace sigmatrace::cli {
namespace {

struct ReportOptions {
  std::string dir;
  bool json = false;
  size_t top = 10;
};

int run_report(const ReportOptions& o) {
  std::string path = o.dir + "/" + exporter::kAggregateFile;
  std::ifstream in(path);
  if (!in) {
    print_error("report: no " + path + " (run `sigmatrace analyze " + o.dir + "` first)");
    return 1;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != "sigmatrace-aggregate") {
    print_error("report: " + path + " is not a sigmatrace aggregate file");
    return 1;
  }
  if (o.json) std::printf("%s\n", j.dump(2).c_str());
  else std::fputs(exporter::render_text_report(j, o.top).c_str(), stdout);
  return 0;
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "print the summary of an analysed experiment");
  sub->add_option("dir", o->dir, "experiment directory (analysed)")->required();
  sub->add_flag("--json", o->json, "print aggregate.json instead of the text summary");
  sub->add_option("--top", o->top, "connections and QPs listed (default 10)");
  return [o] { return run_report(*o); };
}

}  // namespace sigmatrace::cli
