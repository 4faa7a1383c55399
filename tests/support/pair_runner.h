// Runs a client-server pair of real programs (perftest, ucx_perftest, fi_pingpong, ibv_rc_pingpong)
// as the tests do: the server first, the client once the server's TCP port listens, each untraced or
// under `sigmatrace profile`. One runner for every provider's tests.
#pragma once
#include <string>
#include <vector>

#include "support/process_runner.h"

namespace sigmatrace::test {

struct PairOptions {
  std::string mode;                       // "": untraced; else `sigmatrace profile --mode MODE`
  std::string dir;                        // the experiment directory (traced runs)
  bool separate_experiments = false;      // server and client into DIR/server and DIR/client
  std::vector<std::string> profile_args;  // before "--", e.g. {"--softnic"}
  ProcessOptions process;                 // environment of both sides (timeout 60 s unless set)
  int port = 0;                           // the server's port; "@PORT@" in either argv becomes it
};

struct PairResult {
  ProcessResult server, client;  // server: not run when its argv is empty
};

// The client is started only against our own server: if the server died (its port was taken),
// the listener, if any, is someone else's.
PairResult run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, const PairOptions& options);

}  // namespace sigmatrace::test
