// What the tests of real verbs programs over softnic share (verbs_softnic_test.cpp,
// nccl_net_ib_pattern_test.cpp, nvtx_ranges_test.cpp): running a program or a pair of them
// untraced or under `sigmatrace profile --softnic`, comparing their output, and reading the
// aggregates, the analysis and SQL of what was recorded.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/process_runner.h"
#include "support/temp_dir.h"
#include "support/trace_events.h"

namespace sigmatrace::test::softnic_runs {

std::string softnic_dir();

// Skips the test, with the reason, while softnic is not built or program is not installed.
#define REQUIRE_SOFTNIC_AND(program)                                                                   \
  if (!file_exists(softnic_dir() + "/libibverbs.so.1") || !file_exists(softnic_dir() + "/libefa.so.1"))              \
    GTEST_SKIP() << "no emulated NIC in " << softnic_dir() << " (build the softnic targets first)";     \
  if (find_program(program).empty()) GTEST_SKIP() << program << " is not installed"

struct PairRun {
  ProcessResult server;
  ProcessResult client;
  std::vector<ProcessEvents> procs;  // traced runs only
};

// Runs `client` (and `server` first when given) untraced (mode "") or under sigmatrace profile,
// on a fabric of its own ("@PORT@" in an argv is the server's port).
PairRun run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, const std::string& mode,
                 const std::string& dir, std::map<std::string, std::string> env = {});
// softnic emulates transport timeouts in wall time: on an overloaded machine (the build host runs
// other builds) a peer starved of CPU can make a run end with "retry counter exceeded", traced or
// not. Such a run is repeated once; any other failure is the test's.
PairRun run_pair_once_more_on_timeout(const std::vector<std::string>& server, const std::vector<std::string>& client,
                                      const std::string& mode, const std::string& dir, std::map<std::string, std::string> env = {});
// Output with every number masked and blanks collapsed: timings, PSNs and addresses vary from run
// to run, the text around them must not.
std::string shape(const std::string& text);
// The program untraced, then traced in mode into dir: the untraced run must succeed and the traced
// one print the same (numbers aside) when it does; the caller asserts on its exit code.
PairRun traced_like_plain(const std::vector<std::string>& argv, const std::string& mode, const std::string& dir);

uint64_t sum_field(const ProcessEvents& p, format::EventType t, size_t field);

// The processes of a traced run named program that did verbs work (opened a device, or folded
// aggregate entries): a program that execs its ranks from a launcher leaves the launcher out.
std::vector<const ProcessEvents*> working_processes(const PairRun& run, const std::string& program);

struct AggregateSum {
  uint64_t count = 0, bytes = 0;
};
// aggregate_entry: tid, key_kind, key_a, key_b, count, bytes
template <typename Match>  // bool(uint64_t a, uint64_t b)
AggregateSum aggregate(const ProcessEvents& p, format::AggregateKey kind, Match match) {
  AggregateSum s;
  for (const TraceEvent* e : p.of(format::EventType::aggregate_entry))
    if ((*e)[1] == static_cast<uint64_t>(kind) && match((*e)[2], (*e)[3])) s.count += (*e)[4], s.bytes += (*e)[5];
  return s;
}
// The ibv_qp_opcode entries of one opcode (b), over all QPs.
AggregateSum aggregate_opcode(const ProcessEvents& p, uint64_t opcode);

// NAME=N as a program prints its own counters; ~0 when absent.
uint64_t counter(const std::string& out, const std::string& name);

inline const std::vector<std::string> kModes = {"aggregate", "simple", "full"};

// `sigmatrace analyze -q` on an experiment (extra: more options).
ProcessResult analyze_experiment(const std::string& dir, const std::vector<std::string>& extra = {});
// It said the build has no SQLite (the caller skips).
bool skipped_for_sqlite(const ProcessResult& r);
// The rows of a query's answer (CSV, without its header), one string per row.
std::vector<std::string> sql_rows(const std::string& dir, const std::string& q);

}  // namespace sigmatrace::test::softnic_runs
