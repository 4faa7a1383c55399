// Reading analysed experiments' aggregate.json for the commands that work from it (report, diff),
// and comparing two: a missing, unreadable, foreign or misshapen file is one error line naming it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "compare/experiment_diff.h"

namespace sigmatrace::cli {

// False (with the error printed, prefixed by the command's name) when DIR/aggregate.json is
// missing or not a sigmatrace aggregate file.
bool read_aggregate(const std::string& command, const std::string& dir, nlohmann::json* out);

// compare::diff_experiments, false (with the error printed) when an aggregate.json does not have
// the shape this sigmatrace writes.
bool diff_aggregates(const std::string& command, const nlohmann::json& baseline, const nlohmann::json& experiment,
                     const compare::DiffOptions& options, nlohmann::json* out);

}  // namespace sigmatrace::cli
