// Runs a program as a child process with a chosen environment and captures its exit status,
// stdout and stderr: the integration tests run real programs under the profiler with it.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace sigmatrace::test {

struct ProcessResult {
  int exit_code = -1;    // when it exited
  int term_signal = 0;   // when a signal killed it
  std::string out;
  std::string err;
  bool timed_out = false;
};

struct ProcessOptions {
  std::map<std::string, std::string> set_env;  // added or replaced
  std::vector<std::string> unset_env;
  std::string cwd;
  int timeout_s = 120;
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Starts a program in the background; wait_process() collects it.
struct BackgroundProcess {
  int pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};
BackgroundProcess start_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});
ProcessResult wait_process(BackgroundProcess& p, int timeout_s = 120);

bool file_exists(const std::string& path);
// The path of `name` as execvp would find it on PATH ("" when absent); a name with a '/' is checked as is.
std::string find_program(const std::string& name);

// True when a local TCP socket listens on `port` (from /proc/net/tcp{,6}): a server started in the
// background is ready for its client.
bool tcp_port_listening(int port);
// A TCP port nothing listens on, chosen by the kernel (bind to port 0) so that tests running in
// parallel do not pick the same one; a fixed or pid-derived port collided with another test's
// server, and the client then talked to the wrong program.
int unused_tcp_port();
// True while a background process has not exited (a server that failed to bind has).
bool still_running(const BackgroundProcess& p);

std::string build_path(const std::string& relative);   // under the build directory
std::string source_path(const std::string& relative);  // under the source directory
std::vector<std::string> split_lines(const std::string& s);

}  // namespace sigmatrace::test
