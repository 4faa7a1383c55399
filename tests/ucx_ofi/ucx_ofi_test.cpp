// The ucx, ofi and mpi providers on real, unmodified programs: ucx_perftest pairs over UCX's tcp
// (loopback) and shared-memory transports, fi_pingpong pairs over libfabric's tcp (msg, rdm) and
// shm (rdm) providers, and an MPI program under Open MPI over UCX and over libfabric. Each traced
// run sits next to an untraced one: the program's output (numbers masked, iteration counts kept)
// must not change, and the records must match what the program did, counted exactly
// (ucx_perftest -n N -w 0 issues exactly N operations per side; fi_pingpong -I N exchanges N
// messages each way after its fixed warm-up). Skipped, with the reason, where a program is absent.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "export/analysis_run.h"
#include "export/shard_merge.h"
#include "support/pair_runner.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_events.h"

using namespace sigmatrace::test;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::EventType;
using sigmatrace::format::OfiOp;
using sigmatrace::format::UcxOp;

namespace {

#define REQUIRE_PROGRAM(program) \
  if (find_program(program).empty()) GTEST_SKIP() << program << " is not installed"

struct PairRun {
  ProcessResult server;
  ProcessResult client;
  std::vector<ProcessEvents> server_procs;  // traced runs only
  std::vector<ProcessEvents> client_procs;
};

// Runs server then client (each as argv), untraced (mode "") or under sigmatrace profile, each side
// into its own experiment directory so the two are told apart. The server is up once `port` listens.
PairRun run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, int port, const std::string& mode,
                 const std::string& dir, std::map<std::string, std::string> env, bool one_experiment = false) {
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
std::string shape(const std::string& text) {
  static const std::regex hex("0x[0-9a-fA-F]+"), num("[0-9]+(\\.[0-9]+)?"), blanks("[ \t]+");
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

struct UcxCase {
  std::string test;  // ucx_perftest -t
  std::string tls;
  int iterations;
  int size;
};

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

// ---- UCX -------------------------------------------------------------------------------------------

TEST(UcxPerftest, TagLatencyOverTcpRecordsEverySendAndReceiveWithItsLaneAndPeer) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 200, 8}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  ASSERT_EQ(traced.server_procs.size(), 1u);
  const ProcessEvents& cl = traced.client_procs[0];
  const ProcessEvents& sv = traced.server_procs[0];
  for (const ProcessEvents* p : {&cl, &sv}) {
    EXPECT_EQ(count_ucx_ops(*p, UcxOp::tag_send), 200u) << p->path;
    EXPECT_EQ(count_ucx_ops(*p, UcxOp::tag_recv), 200u) << p->path;
    EXPECT_EQ(errors(*p), 0u);
    EXPECT_EQ(op_transports(*p, UcxOp::tag_send), std::set<std::string>{"tcp/lo"});
    EXPECT_EQ(p->count(EventType::ucx_worker_create), 1u);
    EXPECT_EQ(p->count(EventType::ucx_ep_create), 1u);
    EXPECT_EQ(p->count(EventType::ucx_worker_progress), 0u) << "progress is recorded in full mode only";
    for (const TraceEvent* e : p->of(EventType::ucx_op))
      if ((*e)[0] == static_cast<uint64_t>(UcxOp::tag_send)) {
        ASSERT_EQ((*e)[2], 8u);
      }
  }
  // The peer identity: each side's ucx_ep_create names the other side's worker (its UUID, bytes 1-8
  // of the packed address).
  auto uuid = [](const std::string& b) { return b.size() >= 9 ? b.substr(1, 8) : std::string("?"); };
  ASSERT_EQ(cl.count(EventType::ucx_ep_create), 1u);
  EXPECT_EQ(uuid(cl.of(EventType::ucx_ep_create)[0]->bytes), uuid(sv.of(EventType::ucx_worker_create)[0]->bytes));
  EXPECT_EQ(uuid(sv.of(EventType::ucx_ep_create)[0]->bytes), uuid(cl.of(EventType::ucx_worker_create)[0]->bytes));
}

TEST(UcxPerftest, TagLatencyInAggregateModeCountsWithoutEvents) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 300, 8}, "aggregate", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(p.count(EventType::ucx_op), 0u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ucx_ep_op, static_cast<uint64_t>(UcxOp::tag_send)), 300u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ucx_ep_op, static_cast<uint64_t>(UcxOp::tag_recv)), 300u);
    EXPECT_GE(aggregate_count(p, AggregateKey::ucx_uct_op, static_cast<uint64_t>(sigmatrace::format::UctOp::am_short)) +
                  aggregate_count(p, AggregateKey::ucx_uct_op, static_cast<uint64_t>(sigmatrace::format::UctOp::am_bcopy)),
              300u);
  }
}

TEST(UcxPerftest, TagLatencyInFullModeAddsUctOperationsAndProgress) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "tcp", 200, 8}, "full", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_send), 200u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_recv), 200u);
    EXPECT_GE(p.count(EventType::ucx_uct_op), 200u);
    EXPECT_GT(p.count(EventType::ucx_worker_progress), 0u);
  }
}

TEST(UcxPerftest, PutBandwidthOverTcpCountsEveryPutOnTheInitiatorOnly) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_put_bw", "tcp", 400, 4096}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  ASSERT_EQ(traced.server_procs.size(), 1u);
  const ProcessEvents& cl = traced.client_procs[0];
  // bandwidth and atomic tests end with one more operation that tells the target the run is over
  EXPECT_EQ(count_ucx_ops(cl, UcxOp::put), 401u);
  EXPECT_EQ(count_ucx_ops(traced.server_procs[0], UcxOp::put), 0u);
  uint64_t bytes = 0;
  for (const TraceEvent* e : cl.of(EventType::ucx_op))
    if ((*e)[0] == static_cast<uint64_t>(UcxOp::put)) bytes += (*e)[2];
  EXPECT_EQ(bytes, 401u * 4096u);
  EXPECT_GE(cl.count(EventType::ucx_mem_map), 1u);
  EXPECT_GE(traced.server_procs[0].count(EventType::ucx_rkey_pack), 1u);
  EXPECT_GE(cl.count(EventType::ucx_rkey_unpack), 1u);
  EXPECT_EQ(errors(cl), 0u);
}

TEST(UcxPerftest, ActiveMessageLatencyRecordsSendsAndHandlerArrivals) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_am_lat", "tcp", 200, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::am_send), 200u);
    EXPECT_EQ(p.count(EventType::ucx_am_recv), 200u);
  }
}

TEST(UcxPerftest, StreamLatencyOverTcpRecordsEveryStreamSendAndReceive) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"stream_lat", "tcp", 150, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::stream_send), 150u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::stream_recv), 150u);
    EXPECT_EQ(op_transports(p, UcxOp::stream_send), std::set<std::string>{"tcp/lo"});
  }
}

TEST(UcxPerftest, FetchAndAddOverTcpRecordsEachAtomic) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_fadd", "tcp", 200, 8}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  EXPECT_EQ(count_ucx_ops(traced.client_procs[0], UcxOp::atomic_fetch), 201u);  // + the closing one
}

TEST(UcxPerftest, TagLatencyOverSharedMemoryUsesThePosixTransport) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"tag_lat", "posix,self", 300, 8}, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_send), 300u);
    EXPECT_EQ(count_ucx_ops(p, UcxOp::tag_recv), 300u);
    EXPECT_EQ(op_transports(p, UcxOp::tag_send), std::set<std::string>{"posix/memory"});
  }
}

TEST(UcxPerftest, GetOverSharedMemoryCountsEveryGet) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  auto [plain, traced] = ucx_runs({"ucp_get", "posix,self", 300, 4096}, "simple", dir.path());
  ASSERT_EQ(traced.client_procs.size(), 1u);
  EXPECT_EQ(count_ucx_ops(traced.client_procs[0], UcxOp::get), 300u);
  EXPECT_EQ(count_ucx_ops(traced.server_procs[0], UcxOp::get), 0u);
}

// ---- libfabric -------------------------------------------------------------------------------------

size_t count_ofi_ops(const ProcessEvents& p, std::initializer_list<OfiOp> ops, uint64_t bytes = ~uint64_t{0}) {
  size_t n = 0;
  for (const TraceEvent* e : p.of(EventType::ofi_op))
    for (OfiOp op : ops)
      if ((*e)[0] == static_cast<uint64_t>(op) && (bytes == ~uint64_t{0} || (*e)[2] == bytes)) ++n;
  return n;
}

struct OfiCase {
  std::string provider;
  std::string ep_type;
  int iterations;
  int size;
};

// fi_pingpong -I N: after a 4-byte synchronisation message (fi_sendmsg) each side sends N messages
// (fi_inject when they fit, else fi_send) and posts N + 1 receives (one stays posted at the end).
std::pair<PairRun, PairRun> fi_pingpong_runs(const OfiCase& c, const std::string& mode, const std::string& dir) {
  auto run = [&](const std::string& m, const std::string& out) {
    const int port = unused_tcp_port();
    const std::string p = std::to_string(port);
    std::vector<std::string> common = {"fi_pingpong", "-p", c.provider, "-e", c.ep_type, "-I", std::to_string(c.iterations), "-S",
                                       std::to_string(c.size)};
    std::vector<std::string> server = common, client = common;
    server.insert(server.end(), {"-B", p});
    client.insert(client.end(), {"-P", p, "127.0.0.1"});
    return run_pair(server, client, port, m, out, {});
  };
  PairRun plain = run("", dir + "/plain");
  PairRun traced = run(mode, dir + "/" + mode);
  EXPECT_EQ(plain.client.exit_code, 0) << plain.client.out << plain.client.err;
  EXPECT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  EXPECT_EQ(traced.server.exit_code, 0) << traced.server.err;
  EXPECT_EQ(shape(traced.client.out), shape(plain.client.out));
  EXPECT_NE(plain.client.out.find(std::to_string(c.iterations) + " "), std::string::npos) << plain.client.out;
  return {std::move(plain), std::move(traced)};
}

void expect_pingpong_counts(const ProcessEvents& p, const OfiCase& c) {
  EXPECT_EQ(count_ofi_ops(p, {OfiOp::send, OfiOp::inject}, c.size), static_cast<size_t>(c.iterations)) << p.path;
  EXPECT_EQ(count_ofi_ops(p, {OfiOp::sendmsg}), 1u) << p.path;
  EXPECT_EQ(count_ofi_ops(p, {OfiOp::recv}), static_cast<size_t>(c.iterations) + 1) << p.path;
  EXPECT_EQ(errors(p), 0u) << p.path;
  ASSERT_EQ(p.count(EventType::ofi_ep_open), 1u) << p.path;
  EXPECT_EQ(p.of(EventType::ofi_ep_open)[0]->bytes.rfind(c.provider, 0), 0u) << p.of(EventType::ofi_ep_open)[0]->bytes;
  EXPECT_EQ((*p.of(EventType::ofi_ep_open)[0])[2], c.ep_type == "msg" ? 1u : 3u);  // FI_EP_MSG / FI_EP_RDM
}

TEST(FiPingpong, TcpMsgCountsEveryMessageAndNamesTheProvider) {
  REQUIRE_PROGRAM("fi_pingpong");
  TempDir dir;
  OfiCase c{"tcp", "msg", 200, 64};
  auto [plain, traced] = fi_pingpong_runs(c, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    expect_pingpong_counts((*procs)[0], c);
    EXPECT_GT((*procs)[0].count(EventType::ofi_cq_read), 0u);
    EXPECT_GE((*procs)[0].count(EventType::ofi_eq_event), 1u);  // FI_CONNECTED (and FI_CONNREQ on the server)
  }
  // the client's connect names the server's listening address
  bool connect_seen = false;
  for (const TraceEvent* e : traced.client_procs[0].of(EventType::ofi_ep_address)) connect_seen |= (*e)[1] == 2;
  EXPECT_TRUE(connect_seen);
}

TEST(FiPingpong, TcpRdmLargeMessagesUseSendAndAddressVectors) {
  REQUIRE_PROGRAM("fi_pingpong");
  TempDir dir;
  OfiCase c{"tcp", "rdm", 200, 4096};
  auto [plain, traced] = fi_pingpong_runs(c, "simple", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    expect_pingpong_counts((*procs)[0], c);
    EXPECT_GE((*procs)[0].count(EventType::ofi_av_insert), 1u);
  }
}

TEST(FiPingpong, ShmRdmInFullModeRecordsEachCompletion) {
  REQUIRE_PROGRAM("fi_pingpong");
  TempDir dir;
  OfiCase c{"shm", "rdm", 200, 64};
  auto [plain, traced] = fi_pingpong_runs(c, "full", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    expect_pingpong_counts(p, c);
    // fi_pingpong's CQs use FI_CQ_FORMAT_CONTEXT (no length): each receive completes once, injects never
    EXPECT_GE(p.count(EventType::ofi_completion), 200u);
    EXPECT_EQ(p.count(EventType::ofi_cq_read), 0u) << "full mode records completions, not reads";
  }
}

TEST(FiPingpong, ShmRdmInAggregateModeCountsWithoutEvents) {
  REQUIRE_PROGRAM("fi_pingpong");
  TempDir dir;
  OfiCase c{"shm", "rdm", 300, 64};
  auto [plain, traced] = fi_pingpong_runs(c, "aggregate", dir.path());
  for (const auto* procs : {&traced.client_procs, &traced.server_procs}) {
    ASSERT_EQ(procs->size(), 1u);
    const ProcessEvents& p = (*procs)[0];
    EXPECT_EQ(p.count(EventType::ofi_op), 0u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ofi_ep_op, static_cast<uint64_t>(OfiOp::inject)) +
                  aggregate_count(p, AggregateKey::ofi_ep_op, static_cast<uint64_t>(OfiOp::send)),
              300u);
    EXPECT_EQ(aggregate_count(p, AggregateKey::ofi_ep_op, static_cast<uint64_t>(OfiOp::recv)), 301u);
  }
}

// ---- MPI under Open MPI -------------------------------------------------------------------------------

std::string mpi_program() { return build_path("tests/bin/mpi_exchange"); }

#define REQUIRE_MPI()                                                           \
  REQUIRE_PROGRAM("mpirun");                                                    \
  if (!file_exists(mpi_program())) GTEST_SKIP() << "mpi_exchange was not built (no MPI compiler)"

std::string sorted_lines(const std::string& text) {
  std::vector<std::string> lines = split_lines(text);
  std::sort(lines.begin(), lines.end());
  std::string s;
  for (const std::string& l : lines)
    if (!l.empty()) s += l + "\n";
  return s;
}

// mpirun -np 2 [mca...] [sigmatrace profile --mode M -o DIR --] mpi_exchange 100 256
ProcessResult run_mpi(const std::vector<std::string>& mca, const std::string& mode, const std::string& dir) {
  std::vector<std::string> argv = {find_program("mpirun"), "-np", "2"};
  argv.insert(argv.end(), mca.begin(), mca.end());
  if (!mode.empty()) argv.insert(argv.end(), {build_path("bin/sigmatrace"), "profile", "--mode", mode, "-o", dir, "--"});
  argv.insert(argv.end(), {mpi_program(), "100", "256"});
  ProcessOptions o;
  o.set_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}, {"OMPI_MCA_rmaps_base_oversubscribe", "1"}};
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
  o.timeout_s = 60;
  return run_process(argv, o);
}

// The two ranks' traces, by the rank MPI reported (rank_update with source MPI_COMM_WORLD).
std::map<long, const ProcessEvents*> by_mpi_rank(const std::vector<ProcessEvents>& procs) {
  std::map<long, const ProcessEvents*> m;
  for (const ProcessEvents& p : procs)
    for (const TraceEvent* e : p.of(EventType::rank_update))
      if (e->bytes == "MPI_COMM_WORLD") {
        EXPECT_EQ(static_cast<int64_t>((*e)[1]), 2);
        m[static_cast<long>(static_cast<int64_t>((*e)[0]))] = &p;
      }
  return m;
}

std::pair<std::vector<ProcessEvents>, std::map<long, const ProcessEvents*>> mpi_runs(const std::vector<std::string>& mca,
                                                                                      const std::string& dir,
                                                                                      std::vector<ProcessEvents>* procs) {
  ProcessResult plain = run_mpi(mca, "", "");
  ProcessResult traced = run_mpi(mca, "simple", dir);
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(traced.exit_code, 0) << traced.out << traced.err;
  EXPECT_EQ(sorted_lines(traced.out), sorted_lines(plain.out));
  EXPECT_NE(plain.out.find("rank 1 of 2: 100 messages of 256 bytes, checksum 4950"), std::string::npos) << plain.out;
  std::string err;
  EXPECT_TRUE(read_experiment(dir, procs, &err)) << err;
  return {};
}

TEST(OpenMpi, OverUcxEveryMessageIsATagSendWithItsRankAndTransport) {
  REQUIRE_MPI();
  TempDir dir;
  std::vector<ProcessEvents> procs;
  mpi_runs({"--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any", "-x", "UCX_TLS=tcp,self", "-x",
            "UCX_NET_DEVICES=lo"},
           dir.path(), &procs);
  ASSERT_EQ(procs.size(), 2u);
  auto ranks = by_mpi_rank(procs);
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_TRUE(ranks.count(0) && ranks.count(1));
  auto sized = [](const ProcessEvents& p, UcxOp op, uint64_t bytes) {
    size_t n = 0;
    for (const TraceEvent* e : p.of(EventType::ucx_op)) n += (*e)[0] == static_cast<uint64_t>(op) && (*e)[2] == bytes;
    return n;
  };
  EXPECT_EQ(sized(*ranks[0], UcxOp::tag_send, 256), 100u);
  EXPECT_EQ(sized(*ranks[1], UcxOp::tag_recv, 256), 100u);
  EXPECT_EQ(sized(*ranks[1], UcxOp::tag_send, 8), 1u);
  EXPECT_EQ(sized(*ranks[0], UcxOp::tag_recv, 8), 1u);
  EXPECT_EQ(op_transports(*ranks[0], UcxOp::tag_send), std::set<std::string>{"tcp/lo"});
  EXPECT_EQ(errors(*ranks[0]) + errors(*ranks[1]), 0u);
}

TEST(OpenMpi, OverLibfabricEveryMessageIsATaggedSendOnRxmTcp) {
  REQUIRE_MPI();
  TempDir dir;
  std::vector<ProcessEvents> procs;
  mpi_runs({"--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "tcp"}, dir.path(), &procs);
  ASSERT_EQ(procs.size(), 2u);
  auto ranks = by_mpi_rank(procs);
  ASSERT_TRUE(ranks.count(0) && ranks.count(1));
  EXPECT_EQ(count_ofi_ops(*ranks[0], {OfiOp::tsend, OfiOp::tinject, OfiOp::tsenddata, OfiOp::tinjectdata, OfiOp::tsendmsg}, 256), 100u);
  EXPECT_EQ(count_ofi_ops(*ranks[1], {OfiOp::trecv, OfiOp::trecvmsg}, 256), 100u);
  EXPECT_EQ(count_ofi_ops(*ranks[1], {OfiOp::tsend, OfiOp::tinject, OfiOp::tsenddata, OfiOp::tinjectdata, OfiOp::tsendmsg}, 8), 1u);
  // mtl ofi receives with an ignore mask: it is recorded as tag_ignore, not in remote_addr.
  size_t masked = 0;
  for (const TraceEvent* e : ranks[1]->of(EventType::ofi_op)) {
    if ((*e)[0] != static_cast<uint64_t>(OfiOp::trecv) && (*e)[0] != static_cast<uint64_t>(OfiOp::trecvmsg)) continue;
    EXPECT_EQ((*e)[5], 0u) << "a receive has no remote address";
    masked += (*e)[8] != 0;
  }
  EXPECT_GT(masked, 0u);
  for (const auto& [rank, p] : ranks) {
    ASSERT_EQ(p->count(EventType::ofi_ep_open), 1u);
    EXPECT_EQ(p->of(EventType::ofi_ep_open)[0]->bytes, "tcp;ofi_rxm");
    EXPECT_EQ(errors(*p), 0u);
  }
}

// ---- analysis: op rows, peers, flows, transports, matrices ------------------------------------------

const nlohmann::json* layer_entry(const nlohmann::json& agg, const std::string& layer, uint64_t src, uint64_t dst) {
  for (const nlohmann::json& e : agg["layers"])
    if (e["layer"] == layer && e["src_process_id"] == src && e["dst_process_id"].is_number() && e["dst_process_id"] == dst) return &e;
  return nullptr;
}

TEST(LayerAnalysis, UcxTagMessagesHaveTheirPeerTransportAndMatrixEntry) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  const int port = unused_tcp_port();
  const std::string p = std::to_string(port);
  PairRun r = run_pair({"ucx_perftest", "-p", p}, {"ucx_perftest", "127.0.0.1", "-p", p, "-t", "tag_lat", "-n", "150", "-w", "0", "-s", "16"},
                       port, "simple", dir.path(), ucx_env("tcp"), true);
  ASSERT_EQ(r.client.exit_code, 0) << r.client.err;
  sigmatrace::exporter::AnalysisOptions o;
  o.dir = dir.path();
  o.threads = 2;
  sigmatrace::exporter::AnalysisRun a = sigmatrace::exporter::run_analysis(o);
  ASSERT_TRUE(a.ok) << a.error;
  expect_valid_timeline(dir.path());
  ASSERT_EQ(a.model->processes.size(), 2u);
  for (uint64_t src : {0u, 1u}) {
    const nlohmann::json* e = layer_entry(a.aggregate_json, "ucx", src, 1 - src);
    ASSERT_NE(e, nullptr) << a.aggregate_json["layers"].dump();
    EXPECT_EQ((*e)["transport"], "tcp/lo");
    EXPECT_EQ((*e)["ops"], 150u);
    EXPECT_EQ((*e)["bytes"], 150u * 16u);
    EXPECT_EQ(a.aggregates.rank_matrix.bytes[src][1 - src], 150u * 16u);
  }
}

// Handlers set through UCP's old API are recorded with the id the sender used, so every
// ucp_am_send_nb is matched with its arrival (they were recorded with 0x10000 + id: no flow).
TEST(LayerAnalysis, OldApiActiveMessagesAreMatchedWithTheirArrivals) {
  const std::string prog = build_path("tests/bin/ucp_am_old_api");
  if (!file_exists(prog)) GTEST_SKIP() << "skipped: " << prog << " not built (no UCP headers)";
  TempDir dir, rendezvous;
  const std::string exp = dir / "exp", st = build_path("bin/sigmatrace");
  ProcessOptions o;
  o.set_env = ucx_env("tcp");
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
  BackgroundProcess receiver = start_process({st, "profile", "-o", exp, "--", prog, "recv", rendezvous.path(), "60"}, o);
  ProcessResult sender = run_process({st, "profile", "-o", exp, "--", prog, "send", rendezvous.path(), "60"}, o);
  ProcessResult recv = wait_process(receiver);
  ASSERT_EQ(sender.exit_code, 0) << sender.err;
  ASSERT_EQ(recv.exit_code, 0) << recv.err;
  EXPECT_EQ(sender.out, "sent 60 messages of 64 bytes\n");
  EXPECT_EQ(recv.out, "received 60 messages of 64 bytes, 0 bad\n");
  ProcessResult an = run_process({st, "analyze", exp}, o);
  ASSERT_EQ(an.exit_code, 0) << an.err;
  expect_valid_timeline(exp);
  ProcessResult q = run_process({st, "sql", "--csv", exp,
                                 "SELECT (SELECT COUNT(*) FROM op WHERE layer = 'ucx' AND opcode = 'SEND'), "
                                 "(SELECT COUNT(*) FROM op r WHERE layer = 'ucx' AND opcode = 'RECV' AND flow_id IN "
                                 "(SELECT flow_id FROM op WHERE layer = 'ucx' AND opcode = 'SEND'))"},
                                o);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\n60,60"), std::string::npos) << "sends, receives matched to a send:\n" << q.out;
}

// A 4-rank ring over UCX (25 rounds of 8192 bytes): every message's arrow runs from the send to the
// receive's completion, forward in time. Blocking receives complete when Open MPI tests their
// request; MPI_Irecv + MPI_Wait ones through their callback, seen when the request is freed.
// (Stamped at their return, blocking sends ran "after" their receive: half the arrows ran backwards.)
TEST(LayerAnalysis, UcxRingMessagesAreForwardArrowsFromSendToReceiveCompletion) {
  const std::string ring = build_path("tests/bin/mpi_ring");
  REQUIRE_PROGRAM("mpirun");
  if (!file_exists(ring)) GTEST_SKIP() << "skipped: mpi_ring was not built (no MPI compiler)";
  for (const char* pattern : {"blocking", "nonblocking"}) {
    SCOPED_TRACE(pattern);
    TempDir dir;
    auto mpirun = [&](bool traced) {
      std::vector<std::string> argv = {find_program("mpirun"), "-np", "4", "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca",
                                       "pml_ucx_devices", "any", "-x", "UCX_TLS=tcp,self", "-x", "UCX_NET_DEVICES=lo"};
      if (traced) argv.insert(argv.end(), {build_path("bin/sigmatrace"), "profile", "-o", dir / "exp", "--"});
      argv.insert(argv.end(), {ring, "25", "8192", pattern});
      ProcessOptions o;
      o.set_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}, {"OMPI_MCA_rmaps_base_oversubscribe", "1"}};
      o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
      o.timeout_s = 90;
      return run_process(argv, o);
    };
    ProcessResult plain = mpirun(false), traced = mpirun(true);
    ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
    ASSERT_EQ(traced.exit_code, 0) << traced.out << traced.err;
    EXPECT_EQ(sorted_lines(traced.out), sorted_lines(plain.out));
    EXPECT_NE(plain.out.find("rank 0 of 4: 25 rounds of 8192 bytes, checksum 375"), std::string::npos) << plain.out;
    const std::string st = build_path("bin/sigmatrace"), exp = dir / "exp";
    ProcessResult an = run_process({st, "analyze", "-q", exp});
    ASSERT_EQ(an.exit_code, 0) << an.err;
    expect_valid_timeline(exp);
    auto sql = [&](const std::string& q) {
      ProcessResult r = run_process({st, "sql", "--csv", exp, q});
      EXPECT_EQ(r.exit_code, 0) << q << ": " << r.err;
      std::vector<std::string> lines = split_lines(r.out);
      return lines.size() >= 2 ? lines[1] : std::string("(no row) ") + r.out;
    };
    // 100 messages of 8192 bytes, each receive matched to its send, completed no earlier than it.
    EXPECT_EQ(sql("SELECT COUNT(*), SUM(bytes) FROM op WHERE layer = 'ucx' AND opcode = 'SEND' AND bytes = 8192"), "100,819200");
    EXPECT_EQ(sql("SELECT COUNT(*), SUM(r.dur_ns >= 0), SUM(c.ts_ns >= s.ts_ns) FROM op r JOIN op s ON s.flow_id = r.flow_id AND s.opcode = 'SEND' "
                  "JOIN completion c ON c.op_id = r.op_id WHERE r.layer = 'ucx' AND r.opcode = 'RECV' AND r.bytes = 8192"),
              "100,100,100");
    std::ifstream json(exp + "/aggregate.json");
    const nlohmann::json agg = nlohmann::json::parse(json);
    for (const nlohmann::json& p : agg["processes"]) EXPECT_EQ(p["receives_untimed"], 0u) << p.dump();
  }
}

// The same 4-rank UCX ring, its ranks recorded as two hosts (SIGMATRACE_HOST by rank parity),
// analysed whole and in two shards, merged: the merge carries each shard's UCX traffic (which
// only the second pass finds) into the matrices and "layers", and every op row over.
TEST(LayerAnalysis, UcxRingAnalysedInShardsMergesToTheWholeAnalysis) {
  const std::string ring = build_path("tests/bin/mpi_ring");
  REQUIRE_PROGRAM("mpirun");
  if (!file_exists(ring)) GTEST_SKIP() << "skipped: mpi_ring was not built (no MPI compiler)";
  TempDir dir;
  const std::string st = build_path("bin/sigmatrace"), exp = dir / "exp";
  const std::string rank_as_host = "SIGMATRACE_HOST=node$((OMPI_COMM_WORLD_RANK % 2)) exec " + st + " profile -o " + exp + " -- " + ring +
                                   " 25 8192 nonblocking";
  ProcessOptions o;
  o.set_env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}, {"OMPI_MCA_rmaps_base_oversubscribe", "1"}};
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
  o.timeout_s = 90;
  ProcessResult traced = run_process({find_program("mpirun"), "-np", "4", "--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any", "--mca",
                                      "pml_ucx_devices", "any", "-x", "UCX_TLS=tcp,self", "-x", "UCX_NET_DEVICES=lo", "sh", "-c",
                                      rank_as_host},
                                     o);
  ASSERT_EQ(traced.exit_code, 0) << traced.out << traced.err;
  sigmatrace::exporter::AnalysisOptions whole_options;
  whole_options.dir = exp;
  whole_options.threads = 2;
  sigmatrace::exporter::AnalysisRun whole = sigmatrace::exporter::run_analysis(whole_options);
  ASSERT_TRUE(whole.ok) << whole.error;
  ASSERT_EQ(whole.model->hosts, (std::vector<std::string>{"node0", "node1"}));
  ASSERT_FALSE(whole.aggregate_json["layers"].empty());
  auto op_rows = [&](const std::string& d) {
    ProcessResult r = run_process({st, "sql", "--csv", d, "SELECT * FROM op ORDER BY op_id"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string whole_ops = op_rows(exp);
  for (const char* f : {"aggregate.json", "trace.sqlite", "trace.pftrace"}) std::rename((exp + "/" + f).c_str(), (exp + "/whole." + f).c_str());
  for (unsigned k = 0; k < 2; ++k) {
    sigmatrace::exporter::AnalysisOptions so = whole_options;
    so.shard = {k, 2};
    sigmatrace::exporter::AnalysisRun shard = sigmatrace::exporter::run_analysis(so);
    ASSERT_TRUE(shard.ok) << shard.error;
    EXPECT_EQ(shard.shard_hosts, std::vector<std::string>{"node" + std::to_string(k)});
  }
  sigmatrace::exporter::MergeOptions mo;
  mo.dir = exp;
  sigmatrace::exporter::AnalysisRun merged = sigmatrace::exporter::merge_shards(mo);
  ASSERT_TRUE(merged.ok) << merged.error;
  merged.aggregate_json.erase("merged_shards");
  EXPECT_EQ(merged.aggregate_json, whole.aggregate_json);
  EXPECT_EQ(op_rows(exp), whole_ops);
  expect_valid_timeline(exp);
}

TEST(LayerAnalysis, LibfabricMessagesFindTheirPeerThroughTheAddressVector) {
  REQUIRE_PROGRAM("fi_pingpong");
  TempDir dir;
  std::vector<std::string> common = {"fi_pingpong", "-p", "shm", "-e", "rdm", "-I", "120", "-S", "64"};
  std::vector<std::string> server = common, client = common;
  const int port = unused_tcp_port();
  server.insert(server.end(), {"-B", std::to_string(port)});
  client.insert(client.end(), {"-P", std::to_string(port), "127.0.0.1"});
  PairRun r = run_pair(server, client, port, "simple", dir.path(), {}, true);
  ASSERT_EQ(r.client.exit_code, 0) << r.client.err;
  sigmatrace::exporter::AnalysisOptions o;
  o.dir = dir.path();
  o.threads = 2;
  sigmatrace::exporter::AnalysisRun a = sigmatrace::exporter::run_analysis(o);
  ASSERT_TRUE(a.ok) << a.error;
  expect_valid_timeline(dir.path());
  for (uint64_t src : {0u, 1u}) {
    const nlohmann::json* e = layer_entry(a.aggregate_json, "ofi", src, 1 - src);
    ASSERT_NE(e, nullptr) << a.aggregate_json["layers"].dump();
    EXPECT_EQ((*e)["transport"], "shm");
    EXPECT_EQ((*e)["ops"], 121u);  // 120 messages + the synchronisation message
    EXPECT_EQ((*e)["bytes"], 120u * 64u + 4u);
  }
}

// Each address vector's inserts are recorded with its own domain's address length: with one
// process-wide length (the last endpoint's), tcp's 16-byte sockaddr was recorded as shm's 18
// bytes, read past the caller's buffer.
TEST(OfiAddresses, EachAddressVectorRecordsItsOwnFormatsLength) {
  const std::string prog = build_path("tests/bin/ofi_two_address_formats");
  if (!file_exists(prog)) GTEST_SKIP() << "ofi_two_address_formats was not built (no libfabric headers)";
  TempDir dir;
  ProcessResult plain = run_process({prog});
  if (plain.exit_code == 77) GTEST_SKIP() << "skipped: " << plain.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ProcessResult traced = run_process({build_path("bin/sigmatrace"), "profile", "-o", dir.path(), "--", prog});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  std::vector<ProcessEvents> procs;
  std::string err;
  ASSERT_TRUE(read_experiment(dir.path(), &procs, &err)) << err;
  ASSERT_EQ(procs.size(), 1u);
  std::vector<const TraceEvent*> inserts = procs[0].of(EventType::ofi_av_insert);
  std::vector<const TraceEvent*> local = procs[0].of(EventType::ofi_ep_address);
  ASSERT_EQ(inserts.size(), 2u);
  // Each inserted address is the endpoint's own, as fi_getname gave it (recorded as local).
  for (size_t i = 0; i < 2; ++i) {
    const std::string want = "address of " + std::to_string(inserts[i]->bytes.size()) + " bytes";
    EXPECT_NE(plain.out.find(want), std::string::npos) << "insert " << i << " recorded " << inserts[i]->bytes.size()
                                                       << " bytes; the program said:\n" << plain.out;
    bool seen = false;
    for (const TraceEvent* a : local) seen |= a->bytes == inserts[i]->bytes;
    EXPECT_TRUE(seen) << "insert " << i << " does not hold an endpoint's address";
  }
  EXPECT_NE(inserts[0]->bytes.size(), inserts[1]->bytes.size()) << "the two formats were recorded alike";
}

// ---- programs that resolve libfabric by name ---------------------------------------------------------

TEST(OfiDlsym, FunctionsResolvedWithDlsymAndDlvsymAreTraced) {
  const std::string probe = build_path("tests/bin/ofi_dlsym_probe");
  if (!file_exists(probe)) GTEST_SKIP() << "ofi_dlsym_probe was not built (no libfabric headers)";
  for (const std::string& how : {std::string("--dlsym"), std::string("--dlvsym")}) {
    TempDir dir;
    ProcessResult plain = run_process({probe, how});
    ProcessResult traced = run_process({build_path("bin/sigmatrace"), "profile", "-o", dir.path(), "--", probe, how});
    ASSERT_EQ(plain.exit_code, 0) << how;
    ASSERT_EQ(traced.exit_code, 0) << how << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    std::vector<ProcessEvents> procs;
    std::string err;
    ASSERT_TRUE(read_experiment(dir.path(), &procs, &err)) << err;
    ASSERT_EQ(procs.size(), 1u);
    EXPECT_EQ(procs[0].count(EventType::ofi_getinfo), 1u) << how;
    ASSERT_EQ(procs[0].count(EventType::ofi_fabric_open), 1u) << how;
    EXPECT_EQ(procs[0].of(EventType::ofi_fabric_open)[0]->bytes, "tcp") << how;
  }
}

}  // namespace
