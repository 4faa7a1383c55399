// The mpi, ucx and ofi providers under Open MPI: an MPI program over UCX and over libfabric,
// traced and untraced, its ranks' messages counted exactly.
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

// ---- MPI under Open MPI -------------------------------------------------------------------------------

std::string mpi_program() { return build_path("tests/bin/mpi_exchange"); }

#define REQUIRE_MPI()                                                           \
  REQUIRE_PROGRAM("mpirun");                                                    \
  if (!file_exists(mpi_program())) GTEST_SKIP() << "mpi_exchange was not built (no MPI compiler)"


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

}  // namespace
