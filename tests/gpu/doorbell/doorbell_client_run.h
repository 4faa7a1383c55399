// doorbell_client (CPU threads in the GPU threads' place, over softnic's devx, against the
// stand-in libcuda of tests/fake_cuda) run untraced and under `sigmatrace profile`, and what the
// traced run recorded: shared by the doorbell hijack's and the WQE recovery's tests.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "support/process_runner.h"
#include "support/trace_events.h"

namespace sigmatrace::test {

struct ClientRun {
  ProcessResult untraced, traced;
  std::vector<ProcessEvents> procs;
  const ProcessEvents* client() const { return procs.size() == 1 ? &procs[0] : nullptr; }
};

// Runs the client with args untraced, then traced in mode into dir (env: SIGMATRACE_* settings).
ClientRun run_client(const std::vector<std::string>& args, const std::string& mode, const std::string& dir,
                     std::map<std::string, std::string> env = {});

// Both runs succeeded, verified every operation, and printed the same.
void expect_same_output(const ClientRun& r);

// The QPNs of the client's sending QPs, in creation order: every second devx QP (a, b, a, b, ...).
std::vector<uint64_t> sender_qpns(const ProcessEvents& p);

}  // namespace sigmatrace::test
