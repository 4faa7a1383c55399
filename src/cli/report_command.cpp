// `sigmatrace report DIR`: prints the summary of an analysed experiment (the one `analyze` prints)
// from DIR/aggregate.json, or that JSON itself with --json; with --html writes DIR/report.html,
// and with --plots PLOTS also every figure of it as PLOTS/<figure>.svg and .png (docs/report.md);
// with --baseline A the page also shows what changed from A (sigmatrace diff).
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis_run/analysis_run.h"
#include "cli/aggregate_file.h"
#include "cli/commands.h"
#include "export/text_report.h"
#include "report/html_report.h"
#include "report/plots_export.h"

namespace sigmatrace::cli {
namespace {

struct ReportOptions {
  std::string dir;
  bool json = false;
  bool html = false;
  std::string plots;
  std::string baseline;
  size_t top = 10;
};

int write_html(const ReportOptions& o, const nlohmann::json& j) {
  const std::string page = o.dir + "/" + report::kReportFile;
  std::string error;
  if (!report::write_html_report(page, j, &error)) {
    print_error("report: " + error);
    return 1;
  }
  std::printf("report: %s\n", page.c_str());
  if (o.plots.empty()) return 0;
  report::PlotsExport plots;
  if (!report::export_plots(page, o.plots, &plots, &error)) {
    print_error("report --plots: " + error);
    return 1;
  }
  std::printf("report: %zu figures in %s (SVG and PNG)\n", plots.files.size() / 2, o.plots.c_str());
  return 0;
}

int run_report(const ReportOptions& o) {
  nlohmann::json j;
  if (!read_aggregate("report", o.dir, &j)) return 1;
  if (!o.baseline.empty()) {
    nlohmann::json base;
    if (!read_aggregate("report --baseline", o.baseline, &base)) return 1;
    if (!o.html && o.plots.empty()) {
      print_error("report: --baseline draws the changes in report.html: give --html (or use `sigmatrace diff` for text)");
      return 2;
    }
    nlohmann::json d;
    if (!diff_aggregates("report --baseline", base, j, compare::DiffOptions{}, &d)) return 1;
    j["diff"] = std::move(d);
  }
  if (o.html || !o.plots.empty()) return write_html(o, j);
  if (o.json) std::printf("%s\n", j.dump(2).c_str());
  else std::fputs(exporter::render_text_report(j, o.top).c_str(), stdout);
  return 0;
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "print the summary of an analysed experiment; --html: write report.html, --plots: its figures as SVG and PNG");
  sub->add_option("dir", o->dir, "experiment directory (analysed)")->required();
  sub->add_flag("--json", o->json, "print aggregate.json instead of the text summary");
  sub->add_flag("--html", o->html, "write DIR/report.html: the summary, matrices and plots, one self-contained page");
  sub->add_option("--plots", o->plots, "also write every figure of report.html to this directory as SVG and PNG (needs Chromium)");
  sub->add_option("--top", o->top, "connections and QPs listed (default 10)");
  sub->add_option("--baseline", o->baseline, "with --html: also what changed from this analysed experiment (sigmatrace diff)");
  return [o] { return run_report(*o); };
}

}  // namespace sigmatrace::cli
