// See hang_watch.h. Runs on the writer thread, but for the signal handler.
#include "profiler/runtime/hang_watch.h"

#include <signal.h>

#include <cstring>

namespace sigmatrace::profiler {

std::atomic<bool> g_hang_watch_on{false};
WorkCounters g_work;

namespace {
std::atomic<bool> g_dump_requested{false};
struct sigaction g_previous_usr1;

void on_usr1(int) { g_dump_requested.store(true, std::memory_order_relaxed); }
}  // namespace

void HangWatch::start(uint32_t after_s) {
  after_ms_ = uint64_t{after_s} * 1000;
  if (!after_ms_) return;
  g_hang_watch_on.store(true, std::memory_order_relaxed);
  // Only where the program left SIGUSR1 to its default action (which would end it).
  struct sigaction old;
  if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = &on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, nullptr) == 0) g_previous_usr1 = old, installed_ = true;
}

bool HangWatch::due(uint64_t progress, uint64_t now_ms, HangDumpReason* reason, uint64_t* idle_ns) {
  if (!after_ms_) return false;
  if (progress != last_progress_ || !since_ms_) {
    last_progress_ = progress;
    since_ms_ = now_ms;
    dumped_ = false;
  }
  *idle_ns = (now_ms - since_ms_) * 1000000;
  if (g_dump_requested.exchange(false, std::memory_order_relaxed)) {
    *reason = HangDumpReason::signal;
    return true;
  }
  if (dumped_ || now_ms - since_ms_ < after_ms_) return false;
  dumped_ = true;  // once per stall, whether or not the caller records it
  *reason = HangDumpReason::no_progress;
  return true;
}

void HangWatch::stop() {
  g_hang_watch_on.store(false, std::memory_order_relaxed);
  if (!installed_) return;
  struct sigaction cur;
  if (sigaction(SIGUSR1, nullptr, &cur) == 0 && cur.sa_handler == &on_usr1) sigaction(SIGUSR1, &g_previous_usr1, nullptr);
  installed_ = false;
}

}  // namespace sigmatrace::profiler
