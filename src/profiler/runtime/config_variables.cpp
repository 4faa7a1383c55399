// The table of SIGMATRACE_* variables (config_variables.h) and the parsers its rows are made of.
// A row is written with the helper for its kind of value (integer, on/off, one of some words, text),
// which also says, from the same bounds and words, what the variable accepts.
#include "profiler/runtime/config_variables.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "profiler/runtime/cpu_list.h"

namespace sigmatrace::profiler {

namespace {

using Parse = decltype(ConfigVariable::parse);

bool parse_uint(const char* s, uint64_t lo, uint64_t hi, uint32_t* out) {
  if (!*s) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-' || v < lo || v > hi) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool parse_bool(const char* s, bool* out) {
  for (const char* t : {"1", "on", "true", "yes"})
    if (!strcasecmp(s, t)) return *out = true, true;
  for (const char* f : {"0", "off", "false", "no"})
    if (!strcasecmp(s, f)) return *out = false, true;
  return false;
}

constexpr const char* kOnOff = "1|0|on|off|true|false";

// "OFFSET_NS[,DRIFT_PPM]": a signed offset in ns and an optional signed drift in ppm.
bool parse_clock_skew(const char* s, int64_t* offset_ns, double* drift_ppm) {
  char* end = nullptr;
  errno = 0;
  const long long off = strtoll(s, &end, 10);
  if (errno || end == s || off < -1000000000000LL || off > 1000000000000LL) return false;
  double drift = 0;
  if (*end == ',') {
    const char* d = end + 1;
    drift = strtod(d, &end);
    if (end == d || drift < -1000 || drift > 1000) return false;
  }
  if (*end) return false;
  *offset_ns = off;
  *drift_ppm = drift;
  return true;
}

// SIGMATRACE_PROVIDERS: all, none, or names of known providers separated by commas.
bool parse_providers(const char* v, const std::vector<std::string>& known, Config* c, std::string* error) {
  c->providers.clear();
  const std::string list = v;
  if (list == "all") {
    c->providers = known;
    return true;
  }
  if (list == "none") return true;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    std::string p = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool found = false;
    for (const std::string& k : known) found |= (k == p);
    if (!found) {
      std::string names = "all, none";
      for (const std::string& k : known) names += ", " + k;
      *error = "invalid SIGMATRACE_PROVIDERS='" + list + "': unknown provider '" + p + "' (accepted: " + names + ")";
      return false;
    }
    c->providers.push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

ConfigVariable integer(const char* name, const char* option, uint32_t Config::*field, uint32_t lo, uint32_t hi,
                       const char* default_value, const char* description) {
  return {name, option, "integer " + std::to_string(lo) + ".." + std::to_string(hi), default_value, description,
          [=](const char* v, const auto&, Config* c, std::string*) { return parse_uint(v, lo, hi, &(c->*field)); }};
}

ConfigVariable on_off(const char* name, const char* option, bool Config::*field, const char* default_value,
                      const char* description) {
  return {name, option, kOnOff, default_value, description,
          [=](const char* v, const auto&, Config* c, std::string*) { return parse_bool(v, &(c->*field)); }};
}

// One of a few words, each standing for a value of field.
template <typename T>
ConfigVariable one_of(const char* name, const char* option, T Config::*field, std::vector<std::pair<const char*, T>> words,
                      const char* default_value, const char* description) {
  std::string accepted;
  for (const auto& [word, value] : words) accepted += (accepted.empty() ? "" : "|") + std::string(word);
  return {name, option, accepted, default_value, description, [=](const char* v, const auto&, Config* c, std::string*) {
            for (const auto& [word, value] : words)
              if (!strcmp(v, word)) return c->*field = value, true;
            return false;
          }};
}

// Any text (not empty when nonempty is set).
ConfigVariable text(const char* name, const char* option, std::string Config::*field, const char* accepted, bool nonempty,
                    const char* default_value, const char* description) {
  return {name, option, accepted, default_value, description, [=](const char* v, const auto&, Config* c, std::string*) {
            c->*field = v;
            return !nonempty || *v != 0;
          }};
}

ConfigVariable custom(const char* name, const char* option, const char* accepted, const char* default_value,
                      const char* description, Parse parse) {
  return {name, option, accepted, default_value, description, std::move(parse)};
}

std::vector<ConfigVariable> make_table() {
  std::vector<ConfigVariable> t;
  t.push_back(on_off("SIGMATRACE_ENABLE", "", &Config::enabled, "on", "turn the profiler on or off"));
  t.push_back(one_of<TraceMode>("SIGMATRACE_MODE", "--mode", &Config::mode,
                                {{"aggregate", TraceMode::aggregate}, {"simple", TraceMode::simple}, {"full", TraceMode::full}},
                                "simple", "what is recorded (docs/profiling.md, \"Modes\")"));
  t.push_back(custom("SIGMATRACE_PROVIDERS", "--providers", "all|none|comma-separated provider names", "all",
                     "which providers are active", &parse_providers));
  t.push_back(text("SIGMATRACE_OUTPUT", "-o, --output", &Config::output_dir, "a directory path", true,
                   "sigmatrace-<job id>, else sigmatrace-<date>-<time>", "the experiment directory"));
  t.push_back(integer("SIGMATRACE_BUFFER_MB", "--buffer-mb", &Config::buffer_mb, 1, 65536, "64",
                      "event buffer pool per process in MiB"));
  t.push_back(integer("SIGMATRACE_CHUNK_KB", "--chunk-kb", &Config::chunk_kb, 4, 65536, "256",
                      "size of one thread buffer chunk in KiB (the buffer must hold at least 4)"));
  t.push_back(one_of<format::Codec>("SIGMATRACE_COMPRESSION", "--compression", &Config::codec,
                                    {{"zstd", format::Codec::zstd}, {"lz4", format::Codec::lz4}, {"none", format::Codec::none}},
                                    "zstd", "compression of trace chunks"));
  t.push_back(integer("SIGMATRACE_WRITER_THREADS", "", &Config::writer_threads, 1, 16, "1: the writer thread alone",
                      "threads per process that encode and compress full chunks (more for Full-mode rates beyond one "
                      "writer's: docs/performance.md)"));
  t.push_back(integer("SIGMATRACE_CLOCK_SYNC_MS", "", &Config::clock_sync_ms, 10, 600000, "1000",
                      "period of clock calibration samples in ms"));
  t.push_back(integer("SIGMATRACE_HANG_DUMP_S", "--hang-dump", &Config::hang_dump_s, 0, 86400, "0: off",
                      "record the state of a process that made no progress for this long with work outstanding, or "
                      "got SIGUSR1 (docs/hangs.md)"));
  t.push_back(integer("SIGMATRACE_MAX_THREADS", "", &Config::max_threads, 1, 65536, "1024", "threads recorded per process"));
  t.push_back(custom("SIGMATRACE_FORCE", "--force", "1|0", "off",
                     "overwrite a finished earlier experiment in the output directory",
                     [](const char* v, const auto&, Config* c, std::string*) { return parse_bool(v, &c->force); }));
  t.push_back(text("SIGMATRACE_RUN_ID", "", &Config::run_id, "any string", false, "the launcher's job id",
                   "identity shared by the processes of one run"));
  t.push_back(custom("SIGMATRACE_HOST", "--host", "a host name", "gethostname()",
                     "host name recorded for this process (emulated multi-node runs)",
                     [](const char* v, const auto&, Config* c, std::string*) {
                       c->host = v;
                       return *v != 0 && !strchr(v, '/');
                     }));
  t.push_back(one_of<DoorbellMode>("SIGMATRACE_DOORBELLS", "", &Config::doorbells,
                                   {{"off", DoorbellMode::off}, {"forward", DoorbellMode::forward}, {"wqe", DoorbellMode::wqe}},
                                   "forward",
                                   "GPU doorbells: hijacked, recorded and forwarded by pollers; wqe also recovers the WQEs "
                                   "each announced (docs/gpu-doorbells.md)"));
  t.push_back(custom("SIGMATRACE_WQE_BATCH", "", "integer 1..65536 or sync", "128",
                     "WQE slots copied before a batch is parsed (at most the send queue's size); sync reads them before "
                     "forwarding",
                     [](const char* v, const auto&, Config* c, std::string*) {
                       if (!strcmp(v, "sync")) return c->wqe_batch = kWqeBatchSync, true;
                       return parse_uint(v, 1, 65536, &c->wqe_batch);
                     }));
  t.push_back(one_of<bool>("SIGMATRACE_WQE_COPY", "", &Config::wqe_copy_at_doorbell, {{"idle", false}, {"doorbell", true}},
                           "idle",
                           "when WQE copies are enqueued: in the poller's first idle moment after the doorbell, or right "
                           "after forwarding it"));
  t.push_back(custom("SIGMATRACE_DOORBELL_CPUS", "", "a CPU list, CPUs 0..1023 (12,13 or 12-15)",
                     "whole cores the application has no thread on, first",
                     "the CPUs the doorbell pollers may take, shared out among the node's processes by local rank",
                     [](const char* v, const auto&, Config* c, std::string*) { return parse_cpu_list(v, &c->doorbell_cpus); }));
  t.push_back(integer("SIGMATRACE_DOORBELL_PAGES_PER_POLLER", "", &Config::doorbell_pages_per_poller, 1, 64, "64",
                      "doorbell pages one poller thread watches"));
  t.push_back(custom("SIGMATRACE_KERNEL_MARKERS", "", "1|0|on|off|true|false|timed", "on",
                     "while doorbells are hijacked, an event after each kernel launch tells when the kernel ended, to within "
                     "the pollers' looks; timed: the GPU's own end time, at a cost per GPU-initiated operation "
                     "(docs/gpu-doorbells.md); off: no driver call per launch or between doorbells, and no kernel end "
                     "times or running kernels in the analysis and hang dumps",
                     [](const char* v, const auto&, Config* c, std::string*) {
                       bool on = false;
                       if (!strcmp(v, "timed")) return c->kernel_markers = KernelMarkers::timed, true;
                       if (!parse_bool(v, &on)) return false;
                       c->kernel_markers = on ? KernelMarkers::on : KernelMarkers::off;
                       return true;
                     }));
  t.push_back(integer("SIGMATRACE_DOORBELL_SPIN_MS", "", &Config::doorbell_spin_ms, 0, 3600000, "1000",
                      "a poller idle this long polls every 20 us instead of spinning"));
  t.push_back(custom("SIGMATRACE_CHROMIUM", "", "an executable's path", "chromium on PATH",
                     "the headless Chromium `sigmatrace report --plots` draws figures with; the profiler ignores it",
                     nullptr));
  t.push_back(integer("SIGMATRACE_DEBUG_WRITER_DELAY_US", "", &Config::debug_writer_delay_us, 0, 10000000, "0",
                      "testing: the writer sleeps this long per chunk"));
  t.push_back(text("SIGMATRACE_DEBUG_FAIL_PROVIDER", "", &Config::debug_fail_provider, "a provider name", false, "none",
                   "testing: that provider's initialisation fails"));
  t.push_back(custom("SIGMATRACE_DEBUG_CLOCK_SKEW", "", "OFFSET_NS[,DRIFT_PPM] (|OFFSET_NS| <= 10^12, |DRIFT_PPM| <= 1000)",
                     "none",
                     "testing: this process's wall clock reads OFFSET_NS ahead and gains DRIFT_PPM, as on a host whose "
                     "clock is off (docs/analysis.md, \"Host clocks\")",
                     [](const char* v, const auto&, Config* c, std::string*) {
                       return parse_clock_skew(v, &c->debug_clock_offset_ns, &c->debug_clock_drift_ppm);
                     }));
  return t;
}

}  // namespace

std::span<const ConfigVariable> config_variables() {
  static const std::vector<ConfigVariable> table = make_table();
  return table;
}

const ConfigVariable* find_config_variable(const std::string& name) {
  for (const ConfigVariable& v : config_variables())
    if (name == v.name) return &v;
  return nullptr;
}

std::string config_variables_help() {
  std::string s;
  for (const ConfigVariable& v : config_variables())
    s += "  " + std::string(v.name) + "=" + v.accepted + "\n      " + v.description + " (default " + v.default_value + ")\n";
  return s;
}

std::string config_variables_markdown() {
  // A | inside a table cell ends the cell, and <...> would be read as HTML: both are escaped.
  auto cell = [](const std::string& text) {
    std::string out;
    for (char ch : text) out += ch == '|' ? "\\|" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : std::string(1, ch);
    return out;
  };
  std::string s = "| variable | option | accepted | default | what it does |\n|---|---|---|---|---|\n";
  for (const ConfigVariable& v : config_variables()) {
    const std::string option = *v.option ? "`" + std::string(v.option) + "`" : "";
    s += "| `" + std::string(v.name) + "` | " + option + " | " + cell(v.accepted) + " | " + cell(v.default_value) + " | " +
         cell(v.description) + " |\n";
  }
  return s;
}

}  // namespace sigmatrace::profiler
