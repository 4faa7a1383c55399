// The ofi provider on real fi_pingpong pairs over libfabric's tcp (msg, rdm) and shm (rdm)
// providers (fi_pingpong -I N exchanges N messages each way after its fixed warm-up), and on
// programs that open several address formats or resolve libfabric by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ucx_ofi_support.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::ucx_ofi;

namespace {

// ---- libfabric -------------------------------------------------------------------------------------


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
