#include "doorbell_client_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace sigmatrace::test {

ClientRun run_client(const std::vector<std::string>& args, const std::string& mode, const std::string& dir,
                     std::map<std::string, std::string> env) {
  static int fabric = 0;
  std::vector<std::string> argv = {build_path("tests/bin/doorbell_client")};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.set_env = env;
  o.unset_env = {"SIGMATRACE_MODE", "SIGMATRACE_PROVIDERS", "LD_PRELOAD", "SIGMATRACE_DOORBELLS", "SIGMATRACE_WQE_BATCH"};
  o.timeout_s = 60;
  ClientRun r;
  o.set_env["SOFTNIC_FABRIC"] = "doorbell-" + std::to_string(getpid()) + "-" + std::to_string(fabric++);
  o.set_env["LD_LIBRARY_PATH"] = build_path("tests/fake_cuda") + ":" + build_path("softnic");
  r.untraced = run_process(argv, o);
  o.set_env["SOFTNIC_FABRIC"] = "doorbell-" + std::to_string(getpid()) + "-" + std::to_string(fabric++);
  o.set_env["LD_LIBRARY_PATH"] = build_path("tests/fake_cuda");
  std::vector<std::string> p = {build_path("bin/sigmatrace"), "profile", "--softnic", "--mode", mode, "-o", dir, "--"};
  p.insert(p.end(), argv.begin(), argv.end());
  r.traced = run_process(p, o);
  std::string err;
  EXPECT_TRUE(read_experiment(dir, &r.procs, &err)) << err;
  return r;
}

// How a run ended, for a failure message: a run a signal ended has exit_code -1, and the signal
// is what says why.
static std::string ending(const ProcessResult& p) {
  return "signal " + std::to_string(p.term_signal) + (p.timed_out ? " (timed out)" : "") + "\n" + p.out + p.err;
}

void expect_same_output(const ClientRun& r) {
  EXPECT_EQ(r.untraced.exit_code, 0) << ending(r.untraced);
  EXPECT_EQ(r.traced.exit_code, 0) << ending(r.traced);
  EXPECT_EQ(r.traced.out, r.untraced.out);
  EXPECT_NE(r.traced.out.find("all operations verified"), std::string::npos) << r.traced.out;
}

std::vector<uint64_t> sender_qpns(const ProcessEvents& p) {
  std::vector<uint64_t> out;
  auto qps = p.of(format::EventType::devx_qp_create);
  for (size_t i = 0; i < qps.size(); i += 2) out.push_back((*qps[i])[2]);
  return out;
}

}  // namespace sigmatrace::test
