// Every SIGMATRACE_* variable, declared once: its name, the `sigmatrace profile` option that sets
// it, the values it accepts, its default, what it does, and how its value is parsed into Config.
// parse_config (config.cpp), `sigmatrace profile --help` and the table in docs/profiling.md
// (checked by ctest runtime.config_docs) are all made from this table.
//
// Start-up only: building the table and parsing allocate.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "profiler/runtime/config.h"

namespace sigmatrace::profiler {

struct ConfigVariable {
  const char* name;
  const char* option;         // the `sigmatrace profile` option that sets it; "" when none does
  std::string accepted;       // the values it takes, as --help, error messages and the docs say them
  const char* default_value;  // what holds when it is not set
  const char* description;
  // Sets the Config field from value. False: value is not accepted (*error, when the parser set
  // it, is the message; otherwise "invalid NAME='value' (accepted: ...)" is). Null: a variable
  // of the analysis tools that the profiler accepts and ignores.
  std::function<bool(const char* value, const std::vector<std::string>& known_providers, Config* c, std::string* error)> parse;
};

std::span<const ConfigVariable> config_variables();
const ConfigVariable* find_config_variable(const std::string& name);

// The variables as `sigmatrace profile --help` lists them, and as the table of docs/profiling.md.
std::string config_variables_help();
std::string config_variables_markdown();

}  // namespace sigmatrace::profiler
