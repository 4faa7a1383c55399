// See process_runner.h. fork + execvp with pipes; output is drained while the child runs so a
// chatty program cannot block on a full pipe.
#include "support/process_runner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <cstring>

extern char** environ;

namespace sigmatrace::test {

std::string build_path(const std::string& relative) { return std::string(SIGMATRACE_BUILD_DIR) + "/" + relative; }
std::string source_path(const std::string& relative) { return std::string(SIGMATRACE_SOURCE_DIR) + "/" + relative; }

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return file_exists(name) ? name : "";
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (file_exists(dir + "/" + name)) return dir + "/" + name;
  return "";
}

bool tcp_port_listening(int port) {
  char want[16];
  std::snprintf(want, sizeof want, ":%04X ", port);
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find(want);
      // local_address is the second column; state 0A is LISTEN
      if (at != std::string::npos && at < 40 && line.find(" 0A ", at) != std::string::npos) return true;
    }
  }
  return false;
}

int unused_tcp_port() {
  for (int attempt = 0; attempt < 50; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    close(fd);
    if (port > 0 && !tcp_port_listening(port)) return port;
  }
  return -1;
}

bool still_running(const BackgroundProcess& p) {
  if (p.pid <= 0) return false;
  siginfo_t info{};
  // WNOWAIT: look without reaping, wait_process() still collects the status.
  return waitid(P_PID, p.pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    lines.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

BackgroundProcess start_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  BackgroundProcess p;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return p;
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const std::string& k : options.unset_env) env.erase(k);
  for (const auto& [k, v] : options.set_env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(125);
    environ = envp.data();
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  p.pid = pid;
  p.out_fd = out[0];
  p.err_fd = err[0];
  return p;
}

ProcessResult wait_process(BackgroundProcess& p, int timeout_s) {
  ProcessResult r;
  if (p.pid < 0) return r;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pollfd fds[2] = {{p.out_fd, POLLIN, 0}, {p.err_fd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    int n = poll(fds, 2, 200);
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > timeout_s) {
      kill(p.pid, SIGKILL);
      r.timed_out = true;
      break;
    }
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(p.pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  p.pid = -1;
  return r;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  BackgroundProcess p = start_process(argv, options);
  return wait_process(p, options.timeout_s);
}

}  // namespace sigmatrace::test
