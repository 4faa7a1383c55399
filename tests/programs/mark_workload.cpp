// A deterministic workload for the runtime's integration tests: T threads each record N user
// marks (id = thread index, value = sequence number), then the process ends in a chosen way
// (exit, fork, signal, abort, exec). It works with or without the profiler (the mark function is
// looked up at run time) and prints the same output either way.
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using MarkFn = void (*)(uint64_t, uint64_t);
MarkFn g_mark = nullptr;

void emit(uint64_t id, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (g_mark) g_mark(id, i);
}

// together: every thread records its first mark, then waits until all have, so that all of
// them are alive at once. batch > 0: threads are started batch at a time, each batch joined
// before the next (thread churn).
void run_threads(int threads, uint64_t marks, uint64_t first_id, bool together, int batch) {
  std::barrier<> all_started(together ? threads : 1);
  auto body = [&](uint64_t id) {
    if (marks && g_mark) g_mark(id, 0);
    if (together) all_started.arrive_and_wait();
    for (uint64_t i = 1; i < marks; ++i)
      if (g_mark) g_mark(id, i);
  };
  int step = batch > 0 ? batch : threads;
  for (int first = 0; first < threads; first += step) {
    std::vector<std::thread> pool;
    for (int t = first; t < threads && t < first + step; ++t) pool.emplace_back(body, first_id + t);
    for (auto& th : pool) th.join();
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: mark_workload [--threads T] [--marks N] [--then exit|fork|sigterm|sigint|sighup|sigquit|sigterm-storm|own-handler|abort|exec|fork-exec|exec-other|sleep|hold|exit-holding] [--sleep-ms MS] [--phase2] [--together] [--batch N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  uint64_t marks = 1000;
  std::string then = "exit";
  bool phase2 = false;
  int sleep_ms = 0;
  bool together = false;
  int batch = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--marks" && i + 1 < argc) marks = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--then" && i + 1 < argc) then = argv[++i];
    else if (a == "--phase2") phase2 = true;
    else if (a == "--sleep-ms" && i + 1 < argc) sleep_ms = std::atoi(argv[++i]);
    else if (a == "--together") together = true;
    else if (a == "--batch" && i + 1 < argc) batch = std::atoi(argv[++i]);
    else usage();
  }
  g_mark = reinterpret_cast<MarkFn>(dlsym(RTLD_DEFAULT, "sigmatrace_user_mark"));
  uint64_t first_id = phase2 ? 100 : 0;
  std::printf("workload%s: %d threads x %llu marks\n", phase2 ? " phase 2" : "", threads, static_cast<unsigned long long>(marks));
  std::fflush(stdout);
  // hold: the threads stay alive with their marks still buffered (to be killed);
  // exit-holding: the process exits while they are (the profiler's final flush finds them running).
  if (then == "hold" || then == "exit-holding") {
    static std::atomic<bool> release{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        emit(first_id + t, marks);
        while (!release.load()) usleep(1000);
      });
    std::printf("holding\n");
    std::fflush(stdout);
    usleep(static_cast<useconds_t>(sleep_ms) * 1000);
    if (then == "exit-holding") {
      std::printf("done\n");
      std::fflush(stdout);
      std::exit(0);  // with the threads still alive: their std::thread objects are never destroyed
    }
    release = true;
    for (auto& th : pool) th.join();
    std::printf("done\n");
    return 0;
  }
  run_threads(threads, marks, first_id, together, batch);

  if (then == "exit") {
    std::printf("done\n");
    return 0;
  }
  if (then == "fork") {
    pid_t child = fork();
    if (child == 0) {
      emit(50, marks);  // recorded nowhere: tracing is off in a forked child
      std::printf("child done\n");
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    emit(60, marks);  // the parent keeps recording after the fork
    std::printf("parent done, child status %d\n", WEXITSTATUS(status));
    return 0;
  }
  if (then == "sigterm" || then == "sigint" || then == "sighup" || then == "sigquit") {
    std::printf("raising %s\n", then.c_str());
    std::fflush(stdout);
    kill(getpid(), then == "sigterm" ? SIGTERM : then == "sigint" ? SIGINT : then == "sighup" ? SIGHUP : SIGQUIT);
    pause();
    return 1;
  }
  if (then == "sigterm-storm") {  // as a launcher that repeats SIGTERM while the first is handled
    std::printf("raising sigterm from two threads\n");
    std::fflush(stdout);
    std::thread idle([] { poll(nullptr, 0, -1); });  // an event loop's thread, blocked
    std::thread storm([] {
      for (;;) {
        kill(getpid(), SIGTERM);
        usleep(100);
      }
    });
    kill(getpid(), SIGTERM);
    pause();
    return 1;
  }
  if (then == "own-handler") {  // the program's own SIGTERM handler, installed after the profiler's, ends with _exit
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      static const char msg[] = "own handler: _exit(3)\n";
      if (write(1, msg, sizeof msg - 1) < 0) _exit(4);
      _exit(3);
    };
    sigaction(SIGTERM, &sa, nullptr);
    std::printf("raising sigterm\n");
    std::fflush(stdout);
    kill(getpid(), SIGTERM);
    pause();
    return 1;
  }
  if (then == "abort") {
    std::printf("aborting\n");
    std::fflush(stdout);
    std::abort();
  }
  if (then == "exec") {
    std::printf("exec phase 2\n");
    std::fflush(stdout);
    std::string m = std::to_string(marks);
    execl("/proc/self/exe", "mark_workload", "--threads", "1", "--marks", m.c_str(), "--phase2", static_cast<char*>(nullptr));
    std::perror("execl");
    return 1;
  }
  if (then == "fork-exec") {  // a child that execs the workload's phase 2
    std::fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      std::string m = std::to_string(marks);
      execl("/proc/self/exe", "mark_workload", "--threads", "1", "--marks", m.c_str(), "--phase2", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("parent done, child status %d\n", WEXITSTATUS(status));
    return 0;
  }
  if (then == "exec-other") {  // into a program that records nothing
    std::printf("exec echo\n");
    std::fflush(stdout);
    execl("/bin/echo", "echo", "echo ran", static_cast<char*>(nullptr));
    std::perror("execl");
    return 1;
  }
  if (then == "sleep") {  // stay alive a while: an experiment that is still live
    usleep(static_cast<useconds_t>(sleep_ms) * 1000);
    std::printf("done\n");
    return 0;
  }
  usage();
}
