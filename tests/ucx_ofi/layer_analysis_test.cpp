// The analysis of UCX and libfabric traffic from real programs: op rows with their peer and
// transport, flows from a send to its receive, the rank matrix, and the same in shards merged.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ucx_ofi_support.h"
#include <nlohmann/json.hpp>

#include "analysis_run/analysis_run.h"
#include "analysis_run/shard_merge.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::ucx_ofi;

namespace {

// ---- analysis: op rows, peers, flows, transports, matrices ------------------------------------------

const nlohmann::json* layer_entry(const nlohmann::json& agg, const std::string& layer, uint64_t src, uint64_t dst) {
  for (const nlohmann::json& e : agg["layers"])
    if (e["layer"] == layer && e["src_process_id"] == src && e["dst_process_id"].is_number() && e["dst_process_id"] == dst) return &e;
  return nullptr;
}

// The whole analysis of an experiment, on two workers.
sigmatrace::exporter::AnalysisRun analyze(const std::string& dir, sigmatrace::exporter::ShardSpec shard = {}) {
  sigmatrace::exporter::AnalysisOptions o;
  o.dir = dir;
  o.threads = 2;
  o.shard = shard;
  return sigmatrace::exporter::run_analysis(o);
}

TEST(LayerAnalysis, UcxTagMessagesHaveTheirPeerTransportAndMatrixEntry) {
  REQUIRE_PROGRAM("ucx_perftest");
  TempDir dir;
  const int port = unused_tcp_port();
  const std::string p = std::to_string(port);
  PairRun r = run_pair({"ucx_perftest", "-p", p}, {"ucx_perftest", "127.0.0.1", "-p", p, "-t", "tag_lat", "-n", "150", "-w", "0", "-s", "16"},
                       port, "simple", dir.path(), ucx_env("tcp"), true);
  ASSERT_EQ(r.client.exit_code, 0) << r.client.err;
  sigmatrace::exporter::AnalysisRun a = analyze(dir.path());
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

// UCX's own example, tag API, 20 messages of 1000 bytes: the server completes its receives through
// ucp_request_check_status, which says nothing of their length, so each keeps the length it was
// posted with (the completion once replaced it with 0 in some of them, differently each run).
TEST(LayerAnalysis, ReceivesCompletedWithoutALengthKeepThePostedOne) {
  const std::string prog = build_path("tests/bin/ucp_client_server");
  if (!file_exists(prog)) GTEST_SKIP() << "skipped: " << prog << " not built (no UCX example)";
  TempDir dir;
  const std::string exp = dir / "exp", st = build_path("bin/sigmatrace");
  const std::string port = std::to_string(unused_tcp_port());
  ProcessOptions o;
  o.set_env = ucx_env("tcp");
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD"};
  const std::vector<std::string> args = {"-c", "tag", "-i", "20", "-s", "1000", "-p", port};
  std::vector<std::string> server = {st, "profile", "-o", exp, "--", prog};
  server.insert(server.end(), args.begin(), args.end());
  BackgroundProcess srv = start_process(server, o);
  for (int i = 0; i < 200 && !tcp_port_listening(std::stoi(port)) && still_running(srv); ++i) usleep(50000);
  std::vector<std::string> client = {prog, "-a", "127.0.0.1"};
  client.insert(client.end(), args.begin(), args.end());
  ProcessResult c = run_process(client, o);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  kill(srv.pid, SIGTERM);  // the example's server waits for the next client forever
  wait_process(srv);
  ProcessResult an = run_process({st, "analyze", exp}, o);
  ASSERT_EQ(an.exit_code, 0) << an.err;
  ProcessResult q = run_process(
      {st, "sql", "--csv", exp, "SELECT count(*), sum(bytes = 1000), min(bytes) FROM op WHERE layer = 'ucx' AND opcode = 'RECV'"}, o);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("\n20,20,1000"), std::string::npos) << "receives, of 1000 bytes, the smallest:\n" << q.out;
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
  sigmatrace::exporter::AnalysisRun whole = analyze(exp);
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
    sigmatrace::exporter::AnalysisRun shard = analyze(exp, {k, 2});
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
  sigmatrace::exporter::AnalysisRun a = analyze(dir.path());
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

}  // namespace
