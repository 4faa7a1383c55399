// See ucx_ofi_support.h.
#include "ucx_ofi_support.h"

#include <regex>

namespace sigmatrace::test::ucx_ofi {

// Runs server then client (each as argv), untraced (mode "") or under sigmatrace profile, each side
// into its own experiment directory so the two are told apart. The server is up once `port` listens.
PairRun run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, int port, const std::string& mode,
                 const std::string& dir, std::map<std::string, std::string> env, bool one_experiment) {
  PairOptions o;
  o.mode = mode, o.dir = dir, o.port = port;
  o.separate_experiments = !one_experiment;
  o.process.set_env = std::move(env);
  o.process.timeout_s = 60;
  o.process.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
  PairResult pr = sigmatrace::test::run_pair(server, client, o);
  PairRun r{pr.server, pr.client, {}, {}};
  if (!mode.empty() && !one_experiment) {
    std::string err;
    EXPECT_TRUE(read_experiment(dir + "/server", &r.server_procs, &err)) << err;
    EXPECT_TRUE(read_experiment(dir + "/client", &r.client_procs, &err)) << err;
    EXPECT_EQ(r.server_procs.size(), 1u);
    EXPECT_EQ(r.client_procs.size(), 1u);
  }
  return r;
}

// Output with every number masked and blanks collapsed, progress lines ("[thread 0] ...", printed
// on a timer) dropped: timings vary from run to run, the text around them must not.
// Numbers (and the inf or nan ucx_perftest prints when a stage took no measurable time) become #.
std::string shape(const std::string& text) {
  static const std::regex hex("0x[0-9a-fA-F]+"), num("[0-9]+(\\.[0-9]+)?|-?inf|-?nan"), blanks("[ \t]+");
  std::string kept;
  for (const std::string& line : split_lines(text))
    if (line.rfind("[thread", 0) != 0 && line.find("UCX  DIAG") == std::string::npos) kept += line + "\n";
  std::string s = std::regex_replace(kept, hex, "#");
  s = std::regex_replace(s, num, "#");
  return std::regex_replace(s, blanks, " ");
}

// ucx_perftest's "Final:" line: the iteration count (the first number).
long final_iterations(const std::string& out) {
  for (const std::string& line : split_lines(out))
    if (line.rfind("Final:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

size_t count_ucx_ops(const ProcessEvents& p, UcxOp op) {
  size_t n = 0;
  for (const TraceEvent* e : p.of(EventType::ucx_op)) n += (*e)[0] == static_cast<uint64_t>(op);
  return n;
}

// aggregate_entry: tid, key_kind, key_a, key_b, count, bytes
uint64_t aggregate_count(const ProcessEvents& p, AggregateKey kind, uint64_t key_b) {
  uint64_t n = 0;
  for (const TraceEvent* e : p.of(EventType::aggregate_entry))
    if ((*e)[1] == static_cast<uint64_t>(kind) && (*e)[3] == key_b) n += (*e)[4];
  return n;
}

// iface address -> transport name ("tcp/lo") from ucx_iface_open.
std::map<uint64_t, std::string> transports(const ProcessEvents& p) {
  std::map<uint64_t, std::string> m;
  for (const TraceEvent* e : p.of(EventType::ucx_iface_open)) m[(*e)[0]] = e->bytes;
  return m;
}

// The transports that carried the UCP operations `op` (by the iface field of ucx_op).
std::set<std::string> op_transports(const ProcessEvents& p, UcxOp op) {
  std::map<uint64_t, std::string> t = transports(p);
  std::set<std::string> s;
  for (const TraceEvent* e : p.of(EventType::ucx_op))
    if ((*e)[0] == static_cast<uint64_t>(op) && (*e)[8] != 0) s.insert(t.count((*e)[8]) ? t[(*e)[8]] : "unknown");
  return s;
}

std::map<std::string, std::string> ucx_env(const std::string& tls) {
  return {{"UCX_TLS", tls}, {"UCX_NET_DEVICES", "lo"}, {"UCX_LOG_LEVEL", "error"}};
}


void expect_same_output(const PairRun& plain, const PairRun& traced, long iterations) {
  EXPECT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  EXPECT_EQ(traced.server.exit_code, 0) << traced.server.err;
  EXPECT_EQ(shape(traced.client.out), shape(plain.client.out));
  EXPECT_EQ(final_iterations(plain.client.out), iterations);
  EXPECT_EQ(final_iterations(traced.client.out), iterations);
}

// Runs untraced, then traced; returns both.
// Each run gets a port the kernel chooses: a fixed one collides with other tests' servers.
std::pair<PairRun, PairRun> ucx_runs(const UcxCase& c, const std::string& mode, const std::string& dir) {
  auto run = [&](const std::string& m, const std::string& out) {
    const int port = unused_tcp_port();
    const std::string p = std::to_string(port);
    std::vector<std::string> server = {"ucx_perftest", "-p", p};
    std::vector<std::string> client = {"ucx_perftest", "127.0.0.1", "-p", p, "-t", c.test, "-n", std::to_string(c.iterations),
                                       "-w", "0", "-s", std::to_string(c.size)};
    return run_pair(server, client, port, m, out, ucx_env(c.tls));
  };
  PairRun plain = run("", dir + "/plain");
  PairRun traced = run(mode, dir + "/" + mode);
  expect_same_output(plain, traced, c.iterations);
  return {std::move(plain), std::move(traced)};
}

size_t errors(const ProcessEvents& p) { return p.count(EventType::ucx_call_error) + p.count(EventType::ofi_call_error); }

size_t count_ofi_ops(const ProcessEvents& p, std::initializer_list<OfiOp> ops, uint64_t bytes) {
  size_t n = 0;
  for (const TraceEvent* e : p.of(EventType::ofi_op))
    for (OfiOp op : ops)
      if ((*e)[0] == static_cast<uint64_t>(op) && (bytes == ~uint64_t{0} || (*e)[2] == bytes)) ++n;
  return n;
}

std::string sorted_lines(const std::string& text) {
  std::vector<std::string> lines = split_lines(text);
  std::sort(lines.begin(), lines.end());
  std::string s;
  for (const std::string& l : lines)
    if (!l.empty()) s += l + "\n";
  return s;
}

}  // namespace sigmatrace::test::ucx_ofi
