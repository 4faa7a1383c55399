#include "profiler/doorbell/poller.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "format/event_types.h"
#include "profiler/doorbell/cpu_wait.h"
#include "profiler/doorbell/wqe_recovery.h"
#include "profiler/providers/cuda/device_copy.h"
#include "profiler/providers/cuda/kernel_markers.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::doorbell {

using format::EventType;

namespace {

constexpr uint32_t kMaxPagesPerPoller = 64;
constexpr uint32_t kMaxPollers = 256;
// Spin (one pause per round) this many empty rounds after a change, then back off.
constexpr uint32_t kHotRounds = 4096;
constexpr uint32_t kMaxBackoffPauses = 16;   // about 0.2-2 us between looks, CPU dependent
constexpr uint32_t kMonitorCycles = 20000;   // umwait / mwaitx deadline: retire requests are still seen
constexpr long kSleepPollNs = 20000;         // after SIGMATRACE_DOORBELL_SPIN_MS idle

struct Settings {
  const std::atomic<bool>* active = nullptr;
  bool aggregate = false;
  uint32_t pages_per_poller = 1;
  uint64_t spin_ns = 1000000000ull;
  std::vector<int> cpus;
  format::PollerWait wait = format::PollerWait::pause;
};
Settings g_settings;

struct Poller {
  pthread_t thread{};
  int index = 0;
  int cpu = -1;
  std::atomic<WatchedPage*> pages[kMaxPagesPerPoller] = {};
  uint32_t page_count = 0;           // under g_mutex
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> passes{0};   // complete passes over its pages
  // quiesce_pollers asks for a report of every QP's WQE recovery; the poller answers.
  std::atomic<uint64_t> reports_asked{0}, reports_done{0};
  CopyStreams streams;               // WQE recovery's copy streams (poller thread only)
};

std::mutex g_mutex;
Poller* g_pollers[kMaxPollers] = {};
int g_next_index = 0;

uint64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool recording() { return g_settings.active && g_settings.active->load(std::memory_order_relaxed); }

// The poller's SqRecovery of the QP a doorbell named (WQE recovery only). A QP destroyed, or its
// number reused by a new QP, is reported and replaced; the new QP counts from index 0.
SqRecovery* recovery_for(Poller& p, const WatchedPage& w, DoorbellTracker::Seen& s) {
  if (!s.slot) return nullptr;
  SqRecovery*& r = s.slot->recovery;
  if (r && !r->current()) {
    r->report();
    delete r;
    r = nullptr;
    s.delta = s.pi;
  }
  if (!r) r = SqRecovery::create(w.device_context, s.qpn, w.page_id, &p.streams);
  return r;
}

// What the poller asks of every QP's recovery of a page, when.
enum class RecoveryStep { copy, drain, report };

// Applies step to every QP of page; retire: and forgets them.
void for_each_recovery(WatchedPage& w, RecoveryStep step, bool retire = false) {
  w.tracker.for_each([&](DoorbellTracker::Slot& slot) {
    if (!slot.recovery) return;
    if (step == RecoveryStep::report) slot.recovery->report();
    else if (step == RecoveryStep::drain) slot.recovery->drain();
    else slot.recovery->copy_pending();
    if (retire) {
      delete slot.recovery;
      slot.recovery = nullptr;
    }
  });
}

// One look at both registers of a page; true if either changed. The value is forwarded first
// (the NIC waits for it), then decoded and recorded — except with SIGMATRACE_WQE_BATCH=sync,
// where the WQEs it announces are read first.
bool poll_page(Poller& p, WatchedPage& w) {
  bool changed = false;
  for (int i = 0; i < 2; ++i) {
    const uint32_t off = w.offsets[i];
    auto* src = reinterpret_cast<uint64_t*>(w.shadow + off);
    uint64_t v = __atomic_load_n(src, __ATOMIC_ACQUIRE);
    if (v == w.last[i]) continue;
    uint64_t tsc = read_tsc();
    // A BlueFlame write is a whole 64-byte WQE copied into the register block: the words after
    // the first differ from what was forwarded last. Forward the block, its first word last.
    uint64_t block[8];
    bool blueflame = false;
    for (int k = 1; k < 8; ++k) blueflame |= (block[k] = __atomic_load_n(src + k, __ATOMIC_RELAXED)) != 0;
    const auto kind = blueflame ? format::DoorbellKind::blueflame : format::DoorbellKind::doorbell;
    const bool wqes = recovering_wqes() && recording();
    const bool sync = wqes && recovering_sync();
    DoorbellTracker::Seen s{};
    if (sync) {
      s = w.tracker.observe(v);
      if (SqRecovery* r = recovery_for(p, w, s)) r->doorbell(tsc, s.pi, s.delta, kind);
    }
    auto* dst = reinterpret_cast<volatile uint64_t*>(w.real + off);
    if (blueflame)
      for (int k = 1; k < 8; ++k)
        if (block[k]) dst[k] = block[k];
    *dst = v;
#if defined(__x86_64__)
    __builtin_ia32_sfence();  // out of a write-combining buffer now: a UAR is WC or UC memory
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
    if (blueflame)
      for (int k = 1; k < 8; ++k) __atomic_store_n(src + k, uint64_t{0}, __ATOMIC_RELAXED);
    w.last[i] = v;
    ++w.doorbells;
    changed = true;
    if (!sync) s = w.tracker.observe(v);
    if (!recording()) continue;
    if (g_settings.aggregate) aggregate_add(format::AggregateKey::gpu_doorbell_qp, s.qpn, w.page_id, s.delta);
    if (wqes) {
      if (sync) continue;
      if (SqRecovery* r = recovery_for(p, w, s)) {
        r->doorbell(tsc, s.pi, s.delta, kind);
        continue;
      }
    }
    if (!g_settings.aggregate)
      record_at<EventType::gpu_doorbell>(tsc, uint64_t{w.page_id}, uint64_t{s.qpn}, uint64_t{s.pi}, uint64_t{s.delta},
                                         static_cast<uint64_t>(kind), static_cast<uint64_t>(format::DoorbellWqeClass::not_read),
                                         uint64_t{0});
  }
  return changed;
}

void record_poller(uint64_t event, uint32_t pages, uint64_t doorbells, uint64_t cpu_ns, uint64_t wall_ns, int cpu,
                   uint64_t untracked) {
  if (!recording() || g_settings.aggregate) return;
  record<EventType::gpu_poller>(event, uint64_t{pages}, doorbells, cpu_ns, wall_ns, static_cast<uint64_t>(g_settings.wait),
                                int64_t{cpu}, untracked);
}

void* poller_main(void* arg) {
  auto* p = static_cast<Poller*>(arg);
  char name[16];
  snprintf(name, sizeof name, "sigmatrace-db%d", p->index);
  pthread_setname_np(pthread_self(), name);
  // The poller's copies and event queries must never invalidate an application thread's
  // stream capture (CUDA graphs), which the default (global) capture mode would.
  cuda::relax_stream_capture_on_this_thread();
  const uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID), wall0 = now_ns(CLOCK_MONOTONIC);
  record_poller(1, 0, 0, 0, 0, p->cpu, 0);
  uint64_t doorbells = 0, untracked = 0;
  uint32_t pages_served = 0, pauses = 1;
  uint64_t idle_rounds = 0;
  uint64_t idle_since = 0;
  bool sleeping = false;  // idle for longer than SIGMATRACE_DOORBELL_SPIN_MS: one look every 20 us
  while (!p->stop.load(std::memory_order_relaxed)) {
    bool any = false;
    WatchedPage* only = nullptr;
    uint32_t seen = 0;
    for (auto& slot : p->pages) {
      WatchedPage* w = slot.load(std::memory_order_acquire);
      if (!w) continue;
      ++seen;
      only = w;
      any |= poll_page(*p, *w);
      if (w->state.load(std::memory_order_acquire) == page_retiring) {
        poll_page(*p, *w);  // whatever the GPU wrote before it unregistered
        for_each_recovery(*w, RecoveryStep::report, true);
        doorbells += w->doorbells;
        untracked += w->tracker.untracked_qps();
        ++pages_served;
        slot.store(nullptr, std::memory_order_release);
        w->state.store(page_retired, std::memory_order_release);
      }
    }
    const uint64_t asked = p->reports_asked.load(std::memory_order_acquire);
    if (asked != p->reports_done.load(std::memory_order_relaxed)) {
      for (auto& slot : p->pages)
        if (WatchedPage* w = slot.load(std::memory_order_acquire)) {
          poll_page(*p, *w);
          for_each_recovery(*w, RecoveryStep::report);
        }
      if (recording() && cuda::kernel_markers_pending()) cuda::resolve_kernel_markers();
      p->reports_done.store(asked, std::memory_order_release);
    }
    p->passes.fetch_add(1, std::memory_order_release);
    if (any) {
      idle_rounds = 0;
      pauses = 1;
      sleeping = false;
      continue;
    }
    if (idle_rounds < kHotRounds) {
      if (++idle_rounds == kCopyIdleRounds) {  // nothing to forward: time for the WQE copies
        for (auto& slot : p->pages)
          if (WatchedPage* w = slot.load(std::memory_order_acquire)) for_each_recovery(*w, RecoveryStep::copy);
        if (recording() && cuda::kernel_markers_pending()) cuda::resolve_kernel_markers();
      }
      cpu_relax();
      continue;
    }
    if (idle_rounds == kHotRounds) {  // the GPU paused: parse what it announced so far
      for (auto& slot : p->pages)
        if (WatchedPage* w = slot.load(std::memory_order_acquire)) for_each_recovery(*w, RecoveryStep::drain);
      idle_since = now_ns(CLOCK_MONOTONIC);
      ++idle_rounds;
    }
    if (!sleeping && (++idle_rounds & 63) == 0 && now_ns(CLOCK_MONOTONIC) - idle_since > g_settings.spin_ns) sleeping = true;
    if (sleeping) {
      timespec ts{0, kSleepPollNs};
      nanosleep(&ts, nullptr);
      if ((++idle_rounds & 63) == 0 && recording() && cuda::kernel_markers_pending()) cuda::resolve_kernel_markers();  // about every 1.5 ms
      continue;
    }
    if (seen == 1 && g_settings.wait != format::PollerWait::pause) {
      wait_for_write(g_settings.wait, only->shadow + only->offsets[0], kMonitorCycles);
      continue;
    }
    if ((idle_rounds & 4095) == 0 && recording() && cuda::kernel_markers_pending()) cuda::resolve_kernel_markers();
    for (uint32_t i = 0; i < pauses; ++i) cpu_relax();
    if (pauses < kMaxBackoffPauses) pauses *= 2;
  }
  p->streams.close_all();
  record_poller(2, pages_served, doorbells, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, now_ns(CLOCK_MONOTONIC) - wall0, p->cpu, untracked);
  return nullptr;
}

Poller* start_poller(std::string* why) {
  int slot = -1;
  for (int i = 0; i < int(kMaxPollers); ++i)
    if (!g_pollers[i]) {
      slot = i;
      break;
    }
  if (slot < 0) {
    *why = "too many doorbell pollers";
    return nullptr;
  }
  auto* p = new (std::nothrow) Poller();
  if (!p) {
    *why = "out of memory";
    return nullptr;
  }
  p->index = g_next_index++;
  if (!g_settings.cpus.empty()) p->cpu = g_settings.cpus[size_t(p->index) % g_settings.cpus.size()];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (p->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p->cpu, &set);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
  }
  int rc = pthread_create(&p->thread, &attr, &poller_main, p);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    *why = std::string("cannot start a poller thread: ") + strerror(rc);
    delete p;
    return nullptr;
  }
  g_pollers[slot] = p;
  return p;
}

}  // namespace

void configure_pollers(const Config& config, const std::atomic<bool>* active) {
  g_settings.active = active;
  g_settings.aggregate = config.mode == TraceMode::aggregate;
  g_settings.pages_per_poller = config.doorbell_pages_per_poller;
  g_settings.spin_ns = uint64_t(config.doorbell_spin_ms) * 1000000ull;
  g_settings.cpus = config.doorbell_cpus;
  g_settings.wait = best_wait();
  configure_recovery(config, active);
}

bool watch(WatchedPage* page, std::string* why) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Poller* p = nullptr;
  for (Poller* q : g_pollers)
    if (q && q->page_count < g_settings.pages_per_poller) {
      p = q;
      break;
    }
  if (!p && !(p = start_poller(why))) return false;
  for (auto& slot : p->pages) {
    WatchedPage* expected = nullptr;
    if (slot.compare_exchange_strong(expected, page, std::memory_order_acq_rel)) {
      ++p->page_count;
      return true;
    }
  }
  *why = "no free page slot in a poller";  // cannot happen: page_count < pages_per_poller <= 64
  return false;
}

void unwatch(WatchedPage* page) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Poller*& p : g_pollers) {
    if (!p) continue;
    bool here = false;
    for (auto& slot : p->pages) here |= slot.load(std::memory_order_acquire) == page;
    if (!here) continue;
    page->state.store(page_retiring, std::memory_order_release);
    // The poller makes its last pass over the page within a round; a poller that is gone
    // (cannot happen while it has pages) would leave us waiting, hence the bound.
    for (int i = 0; i < 200000 && page->state.load(std::memory_order_acquire) != page_retired; ++i) {
      timespec ts{0, 5000};
      nanosleep(&ts, nullptr);
    }
    if (page->state.load(std::memory_order_acquire) != page_retired) log_line("a doorbell poller did not release its page within 1 s");
    if (--p->page_count == 0) {
      p->stop.store(true, std::memory_order_release);
      pthread_join(p->thread, nullptr);
      delete p;
      p = nullptr;
    }
    return;
  }
}

void quiesce_pollers() {
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t target[kMaxPollers];
  for (uint32_t i = 0; i < kMaxPollers; ++i) {
    if (!g_pollers[i]) continue;
    target[i] = g_pollers[i]->passes.load(std::memory_order_acquire) + 2;
    g_pollers[i]->reports_asked.fetch_add(1, std::memory_order_acq_rel);
  }
  // Bounded (a poller stuck in the driver must not hang the exit): 50 ms, 1 s with WQE
  // recovery, whose report may wait for copies.
  const uint64_t deadline = now_ns(CLOCK_MONOTONIC) + (recovering_wqes() ? 1000000000ull : 50000000ull);
  for (uint32_t i = 0; i < kMaxPollers; ++i) {
    Poller* p = g_pollers[i];
    while (p && (p->passes.load(std::memory_order_acquire) < target[i] ||
                 p->reports_done.load(std::memory_order_acquire) != p->reports_asked.load(std::memory_order_acquire)) &&
           now_ns(CLOCK_MONOTONIC) < deadline) {
      timespec ts{0, 10000};
      nanosleep(&ts, nullptr);
    }
  }
}

}  // namespace sigmatrace::profiler::doorbell
