// See pair_runner.h.
#include "support/pair_runner.h"

#include <unistd.h>

namespace sigmatrace::test {

PairResult run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client, const PairOptions& options) {
  auto wrap = [&](std::vector<std::string> argv, const char* side) {
    for (std::string& a : argv)
      if (a == "@PORT@") a = std::to_string(options.port);
    argv[0] = find_program(argv[0]);
    if (options.mode.empty()) return argv;
    std::vector<std::string> p = {build_path("bin/sigmatrace"), "profile"};
    p.insert(p.end(), options.profile_args.begin(), options.profile_args.end());
    p.insert(p.end(), {"--mode", options.mode, "-o", options.separate_experiments ? options.dir + "/" + side : options.dir, "--"});
    p.insert(p.end(), argv.begin(), argv.end());
    return p;
  };
  PairResult r;
  BackgroundProcess bg;
  if (!server.empty()) {
    bg = start_process(wrap(server, "server"), options.process);
    for (int i = 0; i < 400 && !tcp_port_listening(options.port) && still_running(bg); ++i) usleep(25000);
  }
  if (server.empty() || still_running(bg)) r.client = run_process(wrap(client, "client"), options.process);
  if (!server.empty()) r.server = wait_process(bg, 60);
  return r;
}

}  // namespace sigmatrace::test
