// Reading an analysed experiment's aggregate.json for the commands that work from it (report,
// diff): a missing, unreadable or foreign file is one error line naming it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sigmatrace::cli {

// False (with the error printed, prefixed by the command's name) when DIR/aggregate.json is
// missing or not a sigmatrace aggregate file.
bool read_aggregate(const std::string& command, const std::string& dir, nlohmann::json* out);

}  // namespace sigmatrace::cli
