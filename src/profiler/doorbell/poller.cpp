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

// One look at both registers of a page; true if either changed. The value is forwarded first
// (the NIC waits for it), then decoded and recorded.
bool poll_page(WatchedPage& w) {
  bool changed = false;
  for (int i = 0; i < 2; ++i) {
    const uint32_t off = w.offsets[i];
    auto* src = reinterpret_cast<uint64_t*>(w.shadow + off);
    uint64_t v = __atomic_load_n(src, __ATOMIC_ACQUIRE);
    if (v == w.last[i]) continue;
    uint64_t tsc = read_tsc();
    auto* dst = reinterpret_cast<volatile uint64_t*>(w.real + off);
    // A BlueFlame write is a whole 64-byte WQE copied into the register block: the words after
    // the first differ from what was forwarded last. Forward the block, its first word last.
    bool blueflame = false;
    for (int k = 1; k < 8; ++k) {
      uint64_t x = __atomic_load_n(src + k, __ATOMIC_RELAXED);
      if (x != 0) {
        blueflame = true;
        dst[k] = x;
      }
    }
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
    DoorbellTracker::Seen s = w.tracker.observe(v);
    if (!recording()) continue;
    auto kind = static_cast<uint64_t>(blueflame ? format::DoorbellKind::blueflame : format::DoorbellKind::doorbell);
    if (g_settings.aggregate)
      aggregate_add(format::AggregateKey::gpu_doorbell_qp, s.qpn, w.page_id, s.delta);
    else
      record_at<EventType::gpu_doorbell>(tsc, uint64_t{w.page_id}, uint64_t{s.qpn}, uint64_t{s.pi}, uint64_t{s.delta}, kind);
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
      any |= poll_page(*w);
      if (w->state.load(std::memory_order_acquire) == page_retiring) {
        poll_page(*w);  // whatever the GPU wrote before it unregistered
        doorbells += w->doorbells;
        untracked += w->tracker.untracked_qps();
        ++pages_served;
        slot.store(nullptr, std::memory_order_release);
        w->state.store(page_retired, std::memory_order_release);
      }
    }
    p->passes.fetch_add(1, std::memory_order_release);
    if (any) {
      idle_rounds = 0;
      pauses = 1;
      sleeping = false;
      continue;
    }
    if (idle_rounds < kHotRounds) {
      ++idle_rounds;
      cpu_relax();
      continue;
    }
    if (idle_rounds == kHotRounds) {
      idle_since = now_ns(CLOCK_MONOTONIC);
      ++idle_rounds;
    }
    if (!sleeping && (++idle_rounds & 63) == 0 && now_ns(CLOCK_MONOTONIC) - idle_since > g_settings.spin_ns) sleeping = true;
    if (sleeping) {
      timespec ts{0, kSleepPollNs};
      nanosleep(&ts, nullptr);
      continue;
    }
    if (seen == 1 && g_settings.wait != format::PollerWait::pause) {
      wait_for_write(g_settings.wait, only->shadow + only->offsets[0], kMonitorCycles);
      continue;
    }
    for (uint32_t i = 0; i < pauses; ++i) cpu_relax();
    if (pauses < kMaxBackoffPauses) pauses *= 2;
  }
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
  for (uint32_t i = 0; i < kMaxPollers; ++i)
    target[i] = g_pollers[i] ? g_pollers[i]->passes.load(std::memory_order_acquire) + 2 : 0;
  const uint64_t deadline = now_ns(CLOCK_MONOTONIC) + 50000000ull;
  for (uint32_t i = 0; i < kMaxPollers; ++i)
    while (g_pollers[i] && g_pollers[i]->passes.load(std::memory_order_acquire) < target[i] && now_ns(CLOCK_MONOTONIC) < deadline) {
      timespec ts{0, 10000};
      nanosleep(&ts, nullptr);
    }
}

}  // namespace sigmatrace::profiler::doorbell
