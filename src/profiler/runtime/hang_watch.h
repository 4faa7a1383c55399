// A hang's state on record (sigmatrace profile --hang-dump S, SIGMATRACE_HANG_DUMP_S): the writer
// thread watches whether the process makes progress (completions polled, events recorded by any
// thread: posts, doorbells its pollers saw) and, once nothing has moved for S seconds while work
// is outstanding (signalled sends or receives posted and not completed, or a GPU kernel that the
// profiler marked still running), records a hang_dump
// event and writes it out at once; SIGUSR1 asks for one at any time. The analysis then names the
// QPs that wait and what they wait for (docs/hangs.md). Off (the default), the verbs post and poll
// wrappers pay one relaxed load and a branch; on, relaxed adds to four process-wide counters.
#pragma once
#include <atomic>
#include <cstdint>

namespace sigmatrace::profiler {

extern std::atomic<bool> g_hang_watch_on;

// Work posted that will complete (signalled sends, receives) and completions polled, process-wide;
// and the GPU kernels running that the profiler will see end (marked launches on explicit streams
// while a doorbell page is hijacked: a kernel that drives the NIC itself and waits on its peers).
struct WorkCounters {
  std::atomic<uint64_t> sends_posted{0}, receives_posted{0}, send_completions{0}, receive_completions{0};
  std::atomic<uint64_t> gpu_kernels_running{0};
  uint64_t completions() const {
    return send_completions.load(std::memory_order_relaxed) + receive_completions.load(std::memory_order_relaxed);
  }
  // A signalled send or a receive has not completed, or a marked GPU kernel runs. (A QP with
  // sq_sig_all completes more sends than were posted signalled: its sends tell nothing, its
  // receives still do.)
  bool outstanding() const {
    return gpu_kernels_running.load(std::memory_order_relaxed) != 0 ||
           receives_posted.load(std::memory_order_relaxed) > receive_completions.load(std::memory_order_relaxed) ||
           sends_posted.load(std::memory_order_relaxed) > send_completions.load(std::memory_order_relaxed);
  }
};
extern WorkCounters g_work;

// For the verbs wrappers (application threads): is the watch on, and what was posted / polled.
[[gnu::always_inline]] inline bool hang_watch_on() { return __builtin_expect(g_hang_watch_on.load(std::memory_order_relaxed), 0); }
inline void note_posted(uint64_t signalled_sends, uint64_t receives) {
  if (signalled_sends) g_work.sends_posted.fetch_add(signalled_sends, std::memory_order_relaxed);
  if (receives) g_work.receives_posted.fetch_add(receives, std::memory_order_relaxed);
}
inline void note_completed(uint64_t sends, uint64_t receives) {
  if (sends) g_work.send_completions.fetch_add(sends, std::memory_order_relaxed);
  if (receives) g_work.receive_completions.fetch_add(receives, std::memory_order_relaxed);
}

enum class HangDumpReason : uint64_t { no_progress = 1, signal = 2 };

// The writer's side: fed the process's progress at each look; says when a dump is due. One dump
// per stall: the next only after progress resumed and stopped again.
class HangWatch {
 public:
  // after_s: 0 leaves the watch off. Installs the SIGUSR1 handler when the program has none.
  void start(uint32_t after_s);
  bool on() const { return after_ms_ != 0; }
  // progress: anything that moves while the process works (it need not count anything exactly).
  // True when a dump is due now: *reason and *idle_ns say why.
  bool due(uint64_t progress, uint64_t now_ms, HangDumpReason* reason, uint64_t* idle_ns);
  void stop();  // puts SIGUSR1 back when it is still ours

 private:
  uint64_t after_ms_ = 0;
  uint64_t last_progress_ = 0, since_ms_ = 0;
  bool dumped_ = false;
  bool installed_ = false;
};

}  // namespace sigmatrace::profiler
