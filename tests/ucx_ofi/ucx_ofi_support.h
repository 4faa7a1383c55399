// What the ucx, ofi and mpi providers' tests share: running a pair of real programs (ucx_perftest,
// fi_pingpong) untraced and traced, masking their output's numbers, and counting the records of
// one kind in a process's trace.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/event_types.h"
#include "support/pair_runner.h"
#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/timeline_check.h"
#include "support/trace_events.h"

namespace sigmatrace::test::ucx_ofi {

using format::AggregateKey;
using format::EventType;
using format::OfiOp;
using format::UcxOp;

#define REQUIRE_PROGRAM(program) \
  if (find_program(program).empty()) GTEST_SKIP() << program << " is not installed"

struct PairRun {
  ProcessResult server;
  ProcessResult client;
  std::vector<ProcessEvents> server_procs;  // traced runs only
  std::vector<ProcessEvents> client_procs;
};

// Runs server then client (each as argv), untraced (mode "") or under sigmatrace profile, each side
// into its own experiment directory so the two are told apart (or both into dir: one_experiment).
// The server is up once `port` listens.
PairRun run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, int port, const std::string& mode,
                 const std::string& dir, std::map<std::string, std::string> env, bool one_experiment = false);
// Output with every number masked and blanks collapsed, progress lines dropped.
std::string shape(const std::string& text);
long final_iterations(const std::string& out);  // ucx_perftest's "Final:" iteration count
std::string sorted_lines(const std::string& text);
size_t count_ucx_ops(const ProcessEvents& p, UcxOp op);
size_t count_ofi_ops(const ProcessEvents& p, std::initializer_list<OfiOp> ops, uint64_t bytes = ~uint64_t{0});
uint64_t aggregate_count(const ProcessEvents& p, AggregateKey kind, uint64_t key_b);
std::map<uint64_t, std::string> transports(const ProcessEvents& p);  // iface address -> "tcp/lo"
std::set<std::string> op_transports(const ProcessEvents& p, UcxOp op);
std::map<std::string, std::string> ucx_env(const std::string& tls);
size_t errors(const ProcessEvents& p);

struct UcxCase {
  std::string test;  // ucx_perftest -t
  std::string tls;
  int iterations;
  int size;
};
void expect_same_output(const PairRun& plain, const PairRun& traced, long iterations);
// Runs untraced, then traced (each on a port the kernel chooses); returns both.
std::pair<PairRun, PairRun> ucx_runs(const UcxCase& c, const std::string& mode, const std::string& dir);

}  // namespace sigmatrace::test::ucx_ofi
