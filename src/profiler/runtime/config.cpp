// Parsing and validation of SIGMATRACE_* variables (see config.h), each by its row of the one
// table of variables (config_variables.h). Runs once at start-up.
#include "profiler/runtime/config.h"

#include <cstring>

#include "profiler/runtime/config_variables.h"

namespace sigmatrace::profiler {

const char* mode_name(TraceMode m) {
  switch (m) {
    case TraceMode::aggregate: return "aggregate";
    case TraceMode::simple: return "simple";
    case TraceMode::full: return "full";
  }
  return "?";
}

bool parse_config(char** envp, const std::vector<std::string>& known, Config* cfg, std::string* error) {
  Config c;
  c.providers = known;
  for (char** e = envp; e && *e; ++e) {
    if (strncmp(*e, "SIGMATRACE_", 11) != 0) continue;
    const char* eq = strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    const char* v = eq + 1;
    const ConfigVariable* var = find_config_variable(name);
    if (!var) {
      *error = "unknown variable " + name + " (see `sigmatrace profile --help` for the SIGMATRACE_* variables)";
      return false;
    }
    if (!var->parse) continue;  // read by the analysis tools, not by the profiler
    std::string why;
    if (!var->parse(v, known, &c, &why)) {
      *error = why.empty() ? "invalid " + name + "='" + v + "' (accepted: " + var->accepted + ")" : why;
      return false;
    }
  }
  if (static_cast<uint64_t>(c.chunk_kb) * 4 > static_cast<uint64_t>(c.buffer_mb) * 1024) {
    *error = "invalid SIGMATRACE_CHUNK_KB=" + std::to_string(c.chunk_kb) + " for SIGMATRACE_BUFFER_MB=" +
             std::to_string(c.buffer_mb) + " (accepted: the buffer must hold at least 4 chunks)";
    return false;
  }
  *cfg = c;
  return true;
}

}  // namespace sigmatrace::profiler
