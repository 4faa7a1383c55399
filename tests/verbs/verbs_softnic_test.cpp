// The libibverbs / mlx5 providers on real, unmodified verbs programs over the emulated NIC
// (build/softnic), each run under `sigmatrace profile --softnic` in all three modes next to an
// untraced run: the program's output must not change, and the records must match what the
// program itself says it did (its own counters, perftest's iteration counts, printed QP numbers).
// Skipped, with the reason, while build/softnic or the programs are absent.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/pair_runner.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_events.h"
#include "verbs/softnic_runs.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::softnic_runs;
using sigmatrace::format::AggregateKey;
using sigmatrace::format::EventType;

namespace {

// ---- the probe: exact counts, every way of resolving the verbs functions ---------------------

struct ProbeCase {
  std::string program;  // verbs_probe (linked) or verbs_probe_dl
  std::vector<std::string> args;
  std::string mode;
};

const char* resolution_name(int i) {
  static const char* kNames[] = {"linked", "dlsym", "dlvsym"};
  return kNames[i];
}

class VerbsProbe : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(VerbsProbe, RecordsExactlyWhatTheProgramPostedAndPolled) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kResolution = {
      {"verbs_probe", {}}, {"verbs_probe_dl", {}}, {"verbs_probe_dl", {"--dlvsym"}}};
  const auto& [program, extra] = kResolution[std::get<0>(GetParam())];
  const std::string mode = std::get<1>(GetParam());
  const std::string exe = build_path("tests/bin/" + program);
  REQUIRE_SOFTNIC_AND(exe);
  std::vector<std::string> argv = {exe, "--writes", "50", "--size", "100"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  TempDir t;
  PairRun traced = traced_like_plain(argv, mode, t / "exp");
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.err;

  const std::string& out = traced.client.out;
  const uint64_t send_wrs = counter(out, "send_wrs"), send_bytes = counter(out, "send_bytes"), recv_wrs = counter(out, "recv_wrs"),
                 completions = counter(out, "completions"), errors = counter(out, "error_completions");
  ASSERT_EQ(errors, 1u) << out;
  auto procs = processes_named(traced.procs, program);
  ASSERT_EQ(procs.size(), 1u);
  const ProcessEvents& p = *procs[0];

  // The forced remote access error is recorded in every mode.
  auto wcs = p.of(EventType::ibv_completion);
  size_t access_errors = 0;
  for (const TraceEvent* e : wcs) access_errors += (*e)[3] == IBV_WC_REM_ACCESS_ERR && (*e)[2] == 9999;
  EXPECT_EQ(access_errors, 1u);

  // The linked probe also calls mlx5dv_create_qp (softnic: EOPNOTSUPP): errno untouched (the output
  // compare above), and a failure is recorded in every mode.
  std::smatch dv;
  if (std::regex_search(out, dv, std::regex("mlx5dv_create_qp: failed errno=([0-9]+)"))) {
    size_t recorded = 0;
    for (const TraceEvent* e : p.of(EventType::ibv_call_error))
      recorded += (*e)[0] == static_cast<uint64_t>(sigmatrace::format::IbvCall::create_qp) && (*e)[2] == std::stoull(dv[1]);
    EXPECT_EQ(recorded, 1u);
  }
  if (mode == "aggregate") {
    AggregateSum sends = aggregate(p, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t b) { return b < 0x100; });
    EXPECT_EQ(sends.count, send_wrs);
    EXPECT_EQ(sends.bytes, send_bytes);
    AggregateSum recvs = aggregate(p, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t b) { return b >= 0x100; });
    EXPECT_EQ(recvs.count, recv_wrs);
    AggregateSum pairs = aggregate(p, AggregateKey::ibv_endpoint_pair, [](uint64_t, uint64_t) { return true; });
    EXPECT_EQ(pairs.count, send_wrs);
    EXPECT_EQ(p.count(EventType::ibv_post_send), 0u);  // nothing timestamped on the data path
    EXPECT_EQ(p.count(EventType::ibv_qp_modify), 0u);
    return;
  }
  EXPECT_EQ(p.count(EventType::ibv_device_open), 1u);
  EXPECT_EQ(p.count(EventType::ibv_qp_create), 2u);
  EXPECT_EQ(p.count(EventType::ibv_qp_modify), 6u);
  // Each control call is timed: its events are followed by a call_span (the runtime's own
  // process-stream events may come between, at a chunk boundary) with a plausible duration.
  size_t control = 0, timed = 0;
  for (size_t i = 0; i < p.events.size(); ++i) {
    const auto t = static_cast<EventType>(p.events[i].type);
    if (t != EventType::ibv_device_open && t != EventType::ibv_pd_alloc && t != EventType::ibv_mr_reg && t != EventType::ibv_cq_create &&
        t != EventType::ibv_qp_create && t != EventType::ibv_qp_modify && t != EventType::ibv_qp_destroy)
      continue;
    ++control;
    size_t j = i + 1;
    while (j < p.events.size() && (p.events[j].type == static_cast<uint16_t>(EventType::ibv_port_info) ||
                                   (p.events[j].type < 100 && p.events[j].type != static_cast<uint16_t>(EventType::call_span))))
      ++j;
    if (j < p.events.size() && p.events[j].type == static_cast<uint16_t>(EventType::call_span)) {
      ++timed;
      ASSERT_GE(p.events[j].tsc, p.events[i].tsc);
      EXPECT_GE(p.events[j][0], p.events[j].tsc - p.events[i].tsc) << "the call began before its own event";
      EXPECT_LT(p.events[j][0], 1000000000000ull) << "a control call of minutes";
    }
  }
  EXPECT_EQ(timed, control);
  EXPECT_EQ(p.count(EventType::ibv_qp_destroy), 2u);
  EXPECT_EQ(p.count(EventType::ibv_mr_reg), 1u);
  EXPECT_EQ(sum_field(p, EventType::ibv_post_send, 1), send_wrs);
  EXPECT_EQ(sum_field(p, EventType::ibv_post_send, 2), send_bytes);
  EXPECT_EQ(sum_field(p, EventType::ibv_post_recv, 1), recv_wrs);
  // The two QPs pair up: each one's RTR names the other.
  std::map<uint64_t, uint64_t> dest_of;
  for (const TraceEvent* e : p.of(EventType::ibv_qp_modify))
    if ((*e)[2] == IBV_QPS_RTR) dest_of[(*e)[0]] = (*e)[4];
  ASSERT_EQ(dest_of.size(), 2u);
  for (auto [qpn, dest] : dest_of) EXPECT_EQ(dest_of[dest], qpn);
  if (mode == "full") {
    EXPECT_EQ(p.count(EventType::ibv_send_wr), send_wrs);
    EXPECT_EQ(sum_field(p, EventType::ibv_send_wr, 3), send_bytes);
    EXPECT_EQ(p.count(EventType::ibv_recv_wr), recv_wrs);
    EXPECT_EQ(wcs.size(), completions);
  } else {
    EXPECT_EQ(wcs.size(), errors);  // simple mode: only error completions
  }
}

INSTANTIATE_TEST_SUITE_P(AllResolutionsAndModes, VerbsProbe, ::testing::Combine(::testing::Values(0, 1, 2), ::testing::ValuesIn(kModes)),
                         [](const auto& info) { return std::string(resolution_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param); });

// ---- ib_write_bw: exactly the WRs and bytes perftest reports, QPs that pair up -------------------

class IbWriteBw : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(IbWriteBw, RecordsEveryWriteAndBothSidesPairUp) {
  REQUIRE_SOFTNIC_AND("ib_write_bw");
  const std::string identity = std::get<0>(GetParam()), mode = std::get<1>(GetParam());
  constexpr uint64_t kIters = 3000, kSize = 64;
  std::map<std::string, std::string> env;
  if (identity == "classic") env["SOFTNIC_IDENTITY"] = "classic";  // perftest then uses ibv_post_send
  std::vector<std::string> srv = {"ib_write_bw", "-n", std::to_string(kIters), "-s", std::to_string(kSize), "-p", "@PORT@"};
  std::vector<std::string> cli = srv;
  cli.push_back("localhost");
  TempDir t;
  PairRun plain = run_pair_once_more_on_timeout(srv, cli, "", "", env);
  ASSERT_EQ(plain.client.exit_code, 0) << plain.client.out << plain.client.err;
  PairRun traced = run_pair_once_more_on_timeout(srv, cli, mode, t / "exp", env);
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  ASSERT_EQ(traced.server.exit_code, 0) << traced.server.out << traced.server.err;
  EXPECT_EQ(shape(traced.client.out), shape(plain.client.out));
  EXPECT_EQ(shape(traced.server.out), shape(plain.server.out));
  EXPECT_EQ(shape(traced.client.err), shape(plain.client.err));

  // perftest's own account: "#bytes #iterations ..." and both QPs' identities.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(traced.client.out, m, std::regex("\\n +([0-9]+) +([0-9]+) +[0-9.]+")));
  const uint64_t bytes = std::stoull(m[1]), iters = std::stoull(m[2]);
  ASSERT_EQ(iters, kIters);
  ASSERT_EQ(bytes, kSize);
  std::regex addr_re("(local|remote) address: LID (0x[0-9a-f]+) QPN (0x[0-9a-f]+)");
  std::map<std::string, std::pair<uint64_t, uint64_t>> ids;  // local/remote -> (lid, qpn)
  for (auto it = std::sregex_iterator(traced.client.out.begin(), traced.client.out.end(), addr_re); it != std::sregex_iterator(); ++it)
    ids[(*it)[1]] = {std::stoull((*it)[2], nullptr, 16), std::stoull((*it)[3], nullptr, 16)};
  ASSERT_EQ(ids.size(), 2u);

  auto procs = processes_named(traced.procs, "ib_write_bw");
  ASSERT_EQ(procs.size(), 2u);
  const ProcessEvents* client = nullptr;
  const ProcessEvents* server = nullptr;
  for (const ProcessEvents* p : procs) {
    bool posts = mode == "aggregate" ? aggregate(*p, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t) { return true; }).count > 0
                                     : p->count(EventType::ibv_post_send) > 0;
    (posts ? client : server) = p;
  }
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  const uint64_t local = ids["local"].first << 32 | ids["local"].second, remote = ids["remote"].first << 32 | ids["remote"].second;

  if (mode == "aggregate") {
    AggregateSum w = aggregate(*client, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t b) { return b == IBV_WR_RDMA_WRITE; });
    EXPECT_EQ(w.count, kIters);
    EXPECT_EQ(w.bytes, kIters * kSize);
    AggregateSum all = aggregate(*client, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t) { return true; });
    EXPECT_EQ(all.count, kIters);
    for (const TraceEvent* e : client->of(EventType::aggregate_entry))
      if ((*e)[1] == static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair)) {
        EXPECT_EQ((*e)[2], local);
        EXPECT_EQ((*e)[3], remote);
        EXPECT_EQ((*e)[4], kIters);
        EXPECT_EQ((*e)[5], kIters * kSize);
      }
    EXPECT_EQ(client->count(EventType::ibv_post_send), 0u);
    // The server never sends, yet names its connection (an empty counter made at RTR) so that the
    // analysis can pair the two QPs in aggregate mode too.
    size_t server_pairs = 0;
    for (const TraceEvent* e : server->of(EventType::aggregate_entry))
      if ((*e)[1] == static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair)) {
        ++server_pairs;
        EXPECT_EQ((*e)[2], remote);
        EXPECT_EQ((*e)[3], local);
        EXPECT_EQ((*e)[4], 0u);
      }
    EXPECT_EQ(server_pairs, 1u);
    return;
  }
  EXPECT_EQ(sum_field(*client, EventType::ibv_post_send, 1), kIters);
  EXPECT_EQ(sum_field(*client, EventType::ibv_post_send, 2), kIters * kSize);
  for (const TraceEvent* e : client->of(EventType::ibv_post_send)) EXPECT_EQ((*e)[3], uint64_t{1} << IBV_WR_RDMA_WRITE);
  if (mode == "full") {
    EXPECT_EQ(client->count(EventType::ibv_send_wr), kIters);
    for (const TraceEvent* e : client->of(EventType::ibv_send_wr)) {
      EXPECT_EQ((*e)[2], uint64_t{IBV_WR_RDMA_WRITE});
      EXPECT_EQ((*e)[3], kSize);
    }
  }
  // Both processes' QP transitions pair up, with the LIDs of the ports they were opened on.
  auto rtr_of = [](const ProcessEvents& p) {
    for (const TraceEvent* e : p.of(EventType::ibv_qp_modify))
      if ((*e)[2] == IBV_QPS_RTR) return *e;
    return TraceEvent{};
  };
  TraceEvent c_rtr = rtr_of(*client), s_rtr = rtr_of(*server);
  ASSERT_FALSE(c_rtr.v.empty());
  ASSERT_FALSE(s_rtr.v.empty());
  EXPECT_EQ(c_rtr[0], ids["local"].second);
  EXPECT_EQ(c_rtr[4], s_rtr[0]);
  EXPECT_EQ(s_rtr[4], c_rtr[0]);
  auto lid_of = [](const ProcessEvents& p) { return p.of(EventType::ibv_port_info).empty() ? ~0ull : (*p.of(EventType::ibv_port_info)[0])[2]; };
  EXPECT_EQ(c_rtr[5], lid_of(*server));
  EXPECT_EQ(s_rtr[5], lid_of(*client));
  EXPECT_EQ(client->count(EventType::ibv_call_error), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, IbWriteBw, ::testing::Combine(::testing::Values("wr_api", "classic"), ::testing::ValuesIn(kModes)),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// ---- the other programs of the test bed: unchanged output, something recorded ------------------

struct ProgramCase {
  const char* name;
  std::vector<std::string> server;  // empty: a single process
  std::vector<std::string> client;
  const char* identity;             // SOFTNIC_IDENTITY or ""
};

const std::vector<ProgramCase>& program_cases() {
  static const std::vector<ProgramCase> k = {
      {"ibv_devices", {}, {"ibv_devices"}, ""},
      {"ibv_devinfo", {}, {"ibv_devinfo", "-v"}, ""},
      {"ibv_rc_pingpong", {"ibv_rc_pingpong", "-c", "-n", "500", "-p", "@PORT@"}, {"ibv_rc_pingpong", "-c", "-n", "500", "-p", "@PORT@", "localhost"}, ""},
      {"ibv_rc_pingpong_events", {"ibv_rc_pingpong", "-e", "-c", "-n", "200", "-p", "@PORT@"},
       {"ibv_rc_pingpong", "-e", "-c", "-n", "200", "-p", "@PORT@", "localhost"}, ""},
      {"ibv_srq_pingpong", {"ibv_srq_pingpong", "-c", "-n", "300", "-p", "@PORT@"}, {"ibv_srq_pingpong", "-c", "-n", "300", "-p", "@PORT@", "localhost"}, ""},
      {"ib_send_bw", {"ib_send_bw", "-n", "1000", "-p", "@PORT@"}, {"ib_send_bw", "-n", "1000", "-p", "@PORT@", "localhost"}, ""},
      {"ib_send_lat", {"ib_send_lat", "-n", "500", "-p", "@PORT@"}, {"ib_send_lat", "-n", "500", "-p", "@PORT@", "localhost"}, ""},
      {"ib_send_lat_classic", {"ib_send_lat", "-n", "500", "-p", "@PORT@"}, {"ib_send_lat", "-n", "500", "-p", "@PORT@", "localhost"}, "classic"},
      {"ib_write_lat", {"ib_write_lat", "-n", "500", "-p", "@PORT@"}, {"ib_write_lat", "-n", "500", "-p", "@PORT@", "localhost"}, ""},
      {"ib_read_bw", {"ib_read_bw", "-n", "1000", "-p", "@PORT@"}, {"ib_read_bw", "-n", "1000", "-p", "@PORT@", "localhost"}, ""},
      {"ib_read_lat", {"ib_read_lat", "-n", "500", "-p", "@PORT@"}, {"ib_read_lat", "-n", "500", "-p", "@PORT@", "localhost"}, ""},
      {"ib_atomic_bw", {"ib_atomic_bw", "-n", "1000", "-p", "@PORT@"}, {"ib_atomic_bw", "-n", "1000", "-p", "@PORT@", "localhost"}, ""},
      {"ib_atomic_lat", {"ib_atomic_lat", "-n", "500", "-p", "@PORT@"}, {"ib_atomic_lat", "-n", "500", "-p", "@PORT@", "localhost"}, ""},
  };
  return k;
}

class VerbsPrograms : public ::testing::TestWithParam<std::tuple<size_t, std::string>> {};

TEST_P(VerbsPrograms, RunUnchangedAndAreRecorded) {
  const ProgramCase& pc = program_cases()[std::get<0>(GetParam())];
  const std::string mode = std::get<1>(GetParam());
  REQUIRE_SOFTNIC_AND(pc.client[0]);
  std::map<std::string, std::string> env;
  if (*pc.identity) env["SOFTNIC_IDENTITY"] = pc.identity;
  TempDir t;
  PairRun plain = run_pair_once_more_on_timeout(pc.server, pc.client, "", "", env);
  ASSERT_EQ(plain.client.exit_code, 0) << plain.client.out << plain.client.err;
  PairRun traced = run_pair_once_more_on_timeout(pc.server, pc.client, mode, t / "exp", env);
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  if (!pc.server.empty()) {
    ASSERT_EQ(traced.server.exit_code, 0) << traced.server.out << traced.server.err;
    EXPECT_EQ(shape(traced.server.out), shape(plain.server.out));
  }
  EXPECT_EQ(shape(traced.client.out), shape(plain.client.out));
  EXPECT_EQ(shape(traced.client.err), shape(plain.client.err));
  auto procs = processes_named(traced.procs, pc.client[0]);
  ASSERT_EQ(procs.size(), pc.server.empty() ? 1u : 2u);
  const bool data_path = !pc.server.empty();
  uint64_t operations = 0;  // aggregate mode: the active side's counters (a passive side may have none)
  for (const ProcessEvents* p : procs) {
    EXPECT_EQ(p->count(EventType::ibv_call_error), 0u) << p->path;
    if (mode == "aggregate") {
      operations += aggregate(*p, AggregateKey::ibv_qp_opcode, [](uint64_t, uint64_t) { return true; }).count;
      EXPECT_EQ(p->count(EventType::ibv_post_send) + p->count(EventType::ibv_qp_modify), 0u);
    } else if (pc.client[0] != "ibv_devices") {
      EXPECT_GE(p->count(EventType::ibv_device_open), 1u) << p->path;
      if (data_path) {
        EXPECT_GE(p->count(EventType::ibv_qp_create), 1u) << p->path;
        EXPECT_GE(p->count(EventType::ibv_qp_modify), 2u) << p->path;
      }
    }
  }
  if (mode == "aggregate" && data_path) {
    EXPECT_GT(operations, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(TestBed, VerbsPrograms,
                         ::testing::Combine(::testing::Range<size_t>(0, 13), ::testing::ValuesIn(kModes)),
                         [](const auto& info) { return std::string(program_cases()[std::get<0>(info.param)].name) + "_" + std::get<1>(info.param); });


// ---- softnic's own scenarios: the errors a NIC reports, recorded in every mode -----------------

class SoftnicScenarios : public ::testing::TestWithParam<std::string> {};

TEST_P(SoftnicScenarios, ErrorsAreRecordedInEveryModeAndNothingChanges) {
  const std::string exe = softnic_dir() + "/tests/softnic_verbs_scenarios";
  REQUIRE_SOFTNIC_AND(exe);
  const std::string mode = GetParam();
  TempDir t;
  PairRun plain = run_pair_once_more_on_timeout({}, {exe}, "", "");
  ASSERT_EQ(plain.client.exit_code, 0) << plain.client.out << plain.client.err;
  PairRun traced = run_pair_once_more_on_timeout({}, {exe}, mode, t / "exp");
  ASSERT_EQ(traced.client.exit_code, 0) << traced.client.out << traced.client.err;
  EXPECT_EQ(traced.client.out, plain.client.out);
  EXPECT_EQ(shape(traced.client.err), shape(plain.client.err));
  // The program forks its peer; the forked side is not traced (the runtime stays off in a child
  // until it execs), the parent is side A, which makes the remote access errors.
  auto procs = processes_named(traced.procs, "softnic_verbs_scenarios");
  ASSERT_EQ(procs.size(), 1u);
  const ProcessEvents& p = *procs[0];
  std::map<uint64_t, size_t> by_status;
  for (const TraceEvent* e : p.of(EventType::ibv_completion)) by_status[(*e)[3]]++;
  EXPECT_GE(by_status[IBV_WC_REM_ACCESS_ERR], 2u);  // bad rkey, out of bounds
  EXPECT_GE(by_status[IBV_WC_WR_FLUSH_ERR], 2u);
  EXPECT_GE(p.count(EventType::ibv_call_error), 1u);  // invalid transitions, posting to a QP not ready
  if (mode != "aggregate") {
    // The posts refused by a QP not ready: two ibv_post_send that posted nothing and say so
    // (Simple mode records them before the call and amends them after it), and one
    // ibv_wr_complete of a batch of one WR; each with the call's result.
    std::map<uint64_t, size_t> refused_by_wrs;
    for (const TraceEvent* e : p.of(EventType::ibv_post_send)) {
      if ((*e)[4] == 0) continue;
      EXPECT_EQ(static_cast<int64_t>((*e)[4]), EINVAL);
      refused_by_wrs[(*e)[1]]++;
    }
    EXPECT_EQ(refused_by_wrs, (std::map<uint64_t, size_t>{{0, 2}, {1, 1}}));
  }
  if (mode == "simple") {
    EXPECT_EQ(by_status[IBV_WC_SUCCESS], 0u);  // successful completions are not per-call events
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SoftnicScenarios, ::testing::ValuesIn(kModes), [](const auto& info) { return info.param; });

}  // namespace

// perftest's own timing can print "inf inf inf -nan" on a loaded machine: the output comparison
// takes those for numbers, as it takes any other.
TEST(OutputShape, InfinitiesAndNotANumberAreNumbers) {
  EXPECT_EQ(shape(" 2  1000  1.83  2.10  -0.5\n"), shape(" 2  1000  inf  inf  -nan\n"));
  EXPECT_EQ(shape("0x1f qp 12\n"), shape("0xab qp 7\n"));
  EXPECT_NE(shape("infinite 1\n"), shape("# 1\n"));  // a word that starts with inf stays a word
  EXPECT_NE(shape("bytes 1\n"), shape("iters 1\n"));
}
