// See aggregate_file.h.
#include "cli/aggregate_file.h"

#include <fstream>

#include "analysis_run/analysis_run.h"
#include "cli/commands.h"

namespace sigmatrace::cli {

bool read_aggregate(const std::string& command, const std::string& dir, nlohmann::json* out) {
  const std::string path = dir + "/" + exporter::kAggregateFile;
  std::ifstream in(path);
  if (!in) {
    print_error(command + ": no " + path + " (run `sigmatrace analyze " + dir + "` first)");
    return false;
  }
  *out = nlohmann::json::parse(in, nullptr, false);
  if (out->is_discarded() || !out->is_object() || out->value("format", "") != "sigmatrace-aggregate") {
    print_error(command + ": " + path + " is not a sigmatrace aggregate file");
    return false;
  }
  return true;
}

bool diff_aggregates(const std::string& command, const nlohmann::json& baseline, const nlohmann::json& experiment,
                     const compare::DiffOptions& options, nlohmann::json* out) {
  try {
    *out = compare::diff_experiments(baseline, experiment, options);
    return true;
  } catch (const nlohmann::json::exception& e) {
    print_error(command + ": an aggregate.json is not as this sigmatrace writes it (" + std::string(e.what()) + "): analyse both again");
    return false;
  }
}

}  // namespace sigmatrace::cli
