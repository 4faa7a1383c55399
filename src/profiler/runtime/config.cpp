// Parsing and validation of SIGMATRACE_* variables (see config.h). Runs once at start-up.
#include "profiler/runtime/config.h"

#include "profiler/runtime/cpu_list.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace sigmatrace::profiler {

const char* mode_name(TraceMode m) {
  switch (m) {
    case TraceMode::aggregate: return "aggregate";
    case TraceMode::simple: return "simple";
    case TraceMode::full: return "full";
  }
  return "?";
}

const std::vector<ConfigVariable>& config_variables() {
  static const std::vector<ConfigVariable> vars = {
      {"SIGMATRACE_ENABLE", "1|0|on|off|true|false", "turn the profiler on or off (default on)"},
      {"SIGMATRACE_MODE", "aggregate|simple|full", "what is recorded (default simple)"},
      {"SIGMATRACE_PROVIDERS", "all|none|comma-separated provider names", "which providers are active (default all)"},
      {"SIGMATRACE_OUTPUT", "a directory path", "experiment directory (default from the job id or the time)"},
      {"SIGMATRACE_BUFFER_MB", "integer 1..65536", "event buffer pool per process in MiB (default 64)"},
      {"SIGMATRACE_CHUNK_KB", "integer 4..65536", "size of one thread buffer chunk in KiB (default 256)"},
      {"SIGMATRACE_COMPRESSION", "zstd|lz4|none", "compression of trace chunks (default zstd)"},
      {"SIGMATRACE_WRITER_THREADS", "integer 1..16", "threads per process that encode and compress full chunks (default 1: the writer thread alone)"},
      {"SIGMATRACE_CLOCK_SYNC_MS", "integer 10..600000", "period of clock calibration samples in ms (default 1000)"},
      {"SIGMATRACE_HANG_DUMP_S", "integer 0..86400", "record the state of a process that made no progress for this long, or got SIGUSR1 (default 0: off)"},
      {"SIGMATRACE_MAX_THREADS", "integer 1..65536", "threads recorded per process (default 1024)"},
      {"SIGMATRACE_FORCE", "1|0", "overwrite a finished earlier experiment in the output directory"},
      {"SIGMATRACE_RUN_ID", "any string", "identity shared by the processes of one run (default: launcher job id)"},
      {"SIGMATRACE_HOST", "a host name", "host name recorded for this process (default gethostname)"},
      {"SIGMATRACE_DOORBELLS", "off|forward|wqe", "GPU doorbells: hijacked, recorded and forwarded by pollers (default forward); wqe also recovers the WQEs each announced"},
      {"SIGMATRACE_WQE_BATCH", "integer 1..65536 or sync", "WQE slots copied before a batch is parsed (default 128, at most the send queue's size); sync reads them before forwarding"},
      {"SIGMATRACE_WQE_COPY", "idle|doorbell", "when WQE copies are enqueued: in the poller's first idle moment after the doorbell (default), or right after forwarding it"},
      {"SIGMATRACE_DOORBELL_CPUS", "a CPU list, CPUs 0..1023 (12,13 or 12-15)", "the CPUs the doorbell pollers may take, shared out among the node's processes by local rank"},
      {"SIGMATRACE_DOORBELL_PAGES_PER_POLLER", "integer 1..64", "doorbell pages one poller thread watches (default 64: one thread serves up to 64 pages)"},
      {"SIGMATRACE_KERNEL_MARKERS", "1|0|on|off|true|false|timed",
       "while doorbells are hijacked, an event after each kernel launch tells when the kernel ended, to within the pollers' looks (default on); timed: the GPU's own end time, at a cost per GPU-initiated operation (docs/gpu-doorbells.md); off: no driver call per launch or between doorbells, and no kernel end times or running kernels in the analysis and hang dumps"},
      {"SIGMATRACE_DOORBELL_SPIN_MS", "integer 0..3600000", "a poller idle this long polls every 20 us instead of spinning (default 1000)"},
      {"SIGMATRACE_CHROMIUM", "an executable's path", "the headless Chromium `sigmatrace report --plots` draws figures with (default: chromium on PATH); the profiler ignores it"},
      {"SIGMATRACE_DEBUG_WRITER_DELAY_US", "integer 0..10000000", "testing: the writer sleeps this long per chunk"},
      {"SIGMATRACE_DEBUG_FAIL_PROVIDER", "a provider name", "testing: that provider's initialisation fails"},
      {"SIGMATRACE_DEBUG_CLOCK_SKEW", "OFFSET_NS[,DRIFT_PPM] (|OFFSET_NS| <= 10^12, |DRIFT_PPM| <= 1000)",
       "testing: this process's wall clock reads OFFSET_NS ahead and gains DRIFT_PPM, as on a host whose clock is off"},
  };
  return vars;
}

namespace {

bool parse_uint(const char* s, uint64_t lo, uint64_t hi, uint32_t* out) {
  if (!*s) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-' || v < lo || v > hi) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

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

bool parse_bool(const char* s, bool* out) {
  for (const char* t : {"1", "on", "true", "yes"})
    if (!strcasecmp(s, t)) return *out = true, true;
  for (const char* f : {"0", "off", "false", "no"})
    if (!strcasecmp(s, f)) return *out = false, true;
  return false;
}

std::string bad(const char* name, const char* value, const char* accepted) {
  return std::string("invalid ") + name + "='" + value + "' (accepted: " + accepted + ")";
}

const ConfigVariable* find_variable(const std::string& name) {
  for (const ConfigVariable& v : config_variables())
    if (name == v.name) return &v;
  return nullptr;
}

}  // namespace

bool parse_config(char** envp, const std::vector<std::string>& known, Config* cfg, std::string* error) {
  Config c;
  c.providers = known;
  for (char** e = envp; e && *e; ++e) {
    if (strncmp(*e, "SIGMATRACE_", 11) != 0) continue;
    const char* eq = strchr(*e, '=');
    if (!eq) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    const char* v = eq + 1;
    const ConfigVariable* var = find_variable(name);
    if (!var) {
      *error = "unknown variable " + name + " (see `sigmatrace profile --help` for the SIGMATRACE_* variables)";
      return false;
    }
    bool ok = true;
    if (name == "SIGMATRACE_ENABLE") ok = parse_bool(v, &c.enabled);
    else if (name == "SIGMATRACE_MODE") {
      if (!strcmp(v, "aggregate")) c.mode = TraceMode::aggregate;
      else if (!strcmp(v, "simple")) c.mode = TraceMode::simple;
      else if (!strcmp(v, "full")) c.mode = TraceMode::full;
      else ok = false;
    } else if (name == "SIGMATRACE_PROVIDERS") {
      c.providers.clear();
      std::string list = v;
      if (list == "all") {
        c.providers = known;
      } else if (list != "none") {
        size_t start = 0;
        while (start <= list.size()) {
          size_t comma = list.find(',', start);
          std::string p = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          bool found = false;
          for (const std::string& k : known) found |= (k == p);
          if (!found) {
            std::string names = "all, none";
            for (const std::string& k : known) names += ", " + k;
            *error = "invalid SIGMATRACE_PROVIDERS='" + list + "': unknown provider '" + p + "' (accepted: " + names + ")";
            return false;
          }
          c.providers.push_back(p);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
    } else if (name == "SIGMATRACE_OUTPUT") {
      ok = *v != 0;
      c.output_dir = v;
    } else if (name == "SIGMATRACE_BUFFER_MB") ok = parse_uint(v, 1, 65536, &c.buffer_mb);
    else if (name == "SIGMATRACE_CHUNK_KB") ok = parse_uint(v, 4, 65536, &c.chunk_kb);
    else if (name == "SIGMATRACE_COMPRESSION") {
      if (!strcmp(v, "zstd")) c.codec = format::Codec::zstd;
      else if (!strcmp(v, "lz4")) c.codec = format::Codec::lz4;
      else if (!strcmp(v, "none")) c.codec = format::Codec::none;
      else ok = false;
    } else if (name == "SIGMATRACE_WRITER_THREADS") ok = parse_uint(v, 1, 16, &c.writer_threads);
    else if (name == "SIGMATRACE_CLOCK_SYNC_MS") ok = parse_uint(v, 10, 600000, &c.clock_sync_ms);
    else if (name == "SIGMATRACE_HANG_DUMP_S") ok = parse_uint(v, 0, 86400, &c.hang_dump_s);
    else if (name == "SIGMATRACE_MAX_THREADS") ok = parse_uint(v, 1, 65536, &c.max_threads);
    else if (name == "SIGMATRACE_FORCE") ok = parse_bool(v, &c.force);
    else if (name == "SIGMATRACE_RUN_ID") c.run_id = v;
    else if (name == "SIGMATRACE_HOST") {
      ok = *v != 0 && !strchr(v, '/');
      c.host = v;
    } else if (name == "SIGMATRACE_DEBUG_WRITER_DELAY_US") ok = parse_uint(v, 0, 10000000, &c.debug_writer_delay_us);
    else if (name == "SIGMATRACE_DEBUG_FAIL_PROVIDER") c.debug_fail_provider = v;
    else if (name == "SIGMATRACE_DEBUG_CLOCK_SKEW") ok = parse_clock_skew(v, &c.debug_clock_offset_ns, &c.debug_clock_drift_ppm);
    else if (name == "SIGMATRACE_DOORBELLS") {
      if (!strcmp(v, "off")) c.doorbells = DoorbellMode::off;
      else if (!strcmp(v, "forward")) c.doorbells = DoorbellMode::forward;
      else if (!strcmp(v, "wqe")) c.doorbells = DoorbellMode::wqe;
      else ok = false;
    } else if (name == "SIGMATRACE_WQE_BATCH") {
      if (!strcmp(v, "sync")) c.wqe_batch = kWqeBatchSync;
      else ok = parse_uint(v, 1, 65536, &c.wqe_batch);
    } else if (name == "SIGMATRACE_WQE_COPY") {
      if (!strcmp(v, "idle")) c.wqe_copy_at_doorbell = false;
      else if (!strcmp(v, "doorbell")) c.wqe_copy_at_doorbell = true;
      else ok = false;
    } else if (name == "SIGMATRACE_DOORBELL_CPUS") ok = parse_cpu_list(v, &c.doorbell_cpus);
    else if (name == "SIGMATRACE_DOORBELL_PAGES_PER_POLLER") ok = parse_uint(v, 1, 64, &c.doorbell_pages_per_poller);
    else if (name == "SIGMATRACE_DOORBELL_SPIN_MS") ok = parse_uint(v, 0, 3600000, &c.doorbell_spin_ms);
    else if (name == "SIGMATRACE_KERNEL_MARKERS") {
      bool on = false;
      if (!strcmp(v, "timed")) c.kernel_markers = KernelMarkers::timed;
      else if ((ok = parse_bool(v, &on))) c.kernel_markers = on ? KernelMarkers::on : KernelMarkers::off;
    }
    if (!ok) {
      *error = bad(var->name, v, var->accepted);
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
