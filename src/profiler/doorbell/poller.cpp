#include "profiler/doorbell/poller.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "format/event_types.h"
#include "profiler/doorbell/cpu_wait.h"
#include "profiler/doorbell/poller_cpus.h"
#include "profiler/doorbell/wqe_recovery.h"
#include "profiler/gpu/device_copy.h"
#include "profiler/gpu/kernel_markers.h"
#include "profiler/runtime/identity.h"
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
  std::atomic<WatchedPage*> pages[kMaxPagesPerPoller] = {};
  uint32_t page_count = 0;           // under g_mutex
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> passes{0};   // complete passes over its pages
  // quiesce_pollers asks for a report of every QP's WQE recovery; the poller answers.
  std::atomic<uint64_t> reports_asked{0}, reports_done{0};
  CopyStreams streams;               // WQE recovery's copy streams (poller thread only)
  PollerCpu placement;  // where it runs (poller_cpus.h)
  // It did not let go of a page being unwatched (stuck in a driver call): it gets no new page and
  // none of its pages is freed (g_mutex).
  bool stuck = false;
  std::atomic<uint64_t> context_epoch_done{0};  // the last context ending it let go of
};

std::mutex g_mutex;
Poller* g_pollers[kMaxPollers] = {};
int g_next_index = 0;
long g_local_rank = 0;  // spreads the pollers of a node's processes over the CPUs they may take

bool recording() { return g_settings.active && g_settings.active->load(std::memory_order_relaxed); }
// Kernel markers are CUDA events the driver is asked about.
bool markers_due() { return recording() && driver_calls_allowed() && cuda::kernel_markers_pending(); }

// At exit (an atexit handler registered after CUDA's own, so it runs first): what was rung is
// reported while the driver is still there, and from then on the pollers only forward, without
// a driver call (the exit handlers still to run, CUDA's teardown among them, may ring doorbells:
// those are forwarded, their WQEs counted unread). The pollers stay until the process ends.
std::atomic<bool> g_exiting{false};
void before_exit() {
  g_exiting.store(true, std::memory_order_release);
  quiesce_pollers();
  // The last kernels' ends: a poller asks about markers only now and then, and none asks once
  // the program's QPs (and so its pollers) are gone.
  if (markers_due()) cuda::resolve_kernel_markers();
  forbid_driver_calls();
}

// A context the application is ending, and the epoch that asks every poller to let go of it.
std::atomic<uint64_t> g_context_epoch{0};
std::atomic<uintptr_t> g_ending_context{0};
std::atomic<bool> g_ending_alive{false};

// A forked child has none of its parent's poller threads: it forgets them (never joins or frees
// them) and makes no driver call (CUDA is not usable in a forked child).
void fork_prepare() { g_mutex.lock(); }
void fork_parent() { g_mutex.unlock(); }
void fork_child() {
  g_mutex.unlock();
  for (Poller*& p : g_pollers) p = nullptr;
  forbid_driver_calls();
}

void on_first_watch() {
  static bool done = false;
  if (done) return;
  done = true;
  atexit(before_exit);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  g_local_rank = local_rank_from_environment();
  if (g_local_rank < 0) g_local_rank = 0;
}

uint64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Pending markers are asked about after each doorbell, once the GPU paused for a moment, and
// every 100 us while none comes (every 1.5 ms once the poller sleeps: by the clock, not by
// rounds, since on a loaded machine a 20 us nanosleep can last milliseconds and 64 of them a
// fifth of a second). An untimed marker's end is known only by these looks; a look after each
// doorbell puts every doorbell of a kernel that then waits (for its completions, a barrier)
// before a look that saw it running (docs/gpu-doorbells.md, "Kernels").
// Each ask is a driver call or two per stream with kernels in flight, about 1 us. A burst without
// pauses is asked about once, at its end. Looks every 10 us between doorbells (4 per doorbell in
// gda's operations) cost 0.6-0.8 us per operation on an H200; the look after each doorbell alone
// cost none of that measurably, and neither did events never asked about (docs/performance-log/gpu-forwarding.md,
// "Which looks cost"). Timed markers carry the GPU's own end time: asked about once a millisecond
// (for them, asking after every doorbell cost no more: "What in the kernel markers costs").
constexpr uint64_t kMarkerLookNs = 100000, kSleepingMarkerLookNs = 1500000, kTimedMarkerLookNs = 1000000;
enum class PollerPace { awake, sleeping };
struct MarkerLooks {
  uint64_t last_ns = 0;
  bool doorbell_since = false;
  bool due(PollerPace pace) {
    if (!markers_due()) return false;
    const bool timed = cuda::kernel_markers_mode() == KernelMarkers::timed;
    const uint64_t interval = timed ? kTimedMarkerLookNs : pace == PollerPace::sleeping ? kSleepingMarkerLookNs : kMarkerLookNs;
    const uint64_t now = now_ns(CLOCK_MONOTONIC);
    if ((timed || !doorbell_since) && now - last_ns < interval) return false;
    last_ns = now;
    doorbell_since = false;
    return true;
  }
};

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

// What one doorbell value announced for its QP: counted, and recorded or handed to the QP's WQE
// recovery (read: it already has it, in sync mode).
void account(Poller& p, WatchedPage& w, DoorbellTracker::Seen& s, uint64_t tsc, format::DoorbellKind kind, bool read) {
  if (!recording()) return;
  if (g_settings.aggregate) aggregate_add(format::AggregateKey::gpu_doorbell_qp, s.qpn, w.page_id, s.delta);
  if (recovering_wqes()) {
    if (read) return;
    if (SqRecovery* r = recovery_for(p, w, s)) {
      r->doorbell(tsc, s.pi, s.delta, kind);
      return;
    }
  }
  if (!g_settings.aggregate)
    record_at<EventType::gpu_doorbell>(tsc, uint64_t{w.page_id}, uint64_t{s.qpn}, uint64_t{s.pi}, uint64_t{s.delta},
                                       static_cast<uint64_t>(kind), static_cast<uint64_t>(format::DoorbellWqeClass::not_read), uint64_t{0});
}

// The tracker's view of a doorbell value rung through register i; false: it rings exactly what
// was already forwarded from its QP's doorbell record (counted then, not again).
bool observe_register(WatchedPage& w, int i, uint64_t v, DoorbellTracker::Seen* s) {
  *s = w.tracker.observe(v, w.device_context);
  if (!s->slot) return true;
  const bool again = s->slot->from_record && s->delta == 0;  // the index its record announced
  s->slot->reg = i;
  s->slot->from_record = false;
  return !again;
}

// Register i holds v (read when it had been forwarded `forwards_then` times): forwarded unless
// a newer value already was (a forward-only look in between), then recorded — except with
// SIGMATRACE_WQE_BATCH=sync, where the WQEs it announces are read first. forward_only: the
// poller is waiting for a copy; recording waits for its next look.
void handle_register(Poller& p, WatchedPage& w, int i, uint64_t v, uint64_t forwards_then, bool forward_only) {
  DoorbellRegister& r = w.registers[i];
  if (v != r.forwarded && r.forwards == forwards_then) {
    const uint64_t tsc = read_tsc();
    uint64_t body[8];
    const bool blueflame = r.send && read_blueflame(reinterpret_cast<const uint64_t*>(w.shadow + r.offset), v, r.body, body);
    const auto kind = blueflame ? format::DoorbellKind::blueflame : format::DoorbellKind::doorbell;
    DoorbellTracker::Seen s{};
    const bool sync = !forward_only && r.send && recovering_wqes() && recording() && recovering_sync();
    const bool counted = sync && observe_register(w, i, v, &s);
    if (counted)
      if (SqRecovery* rec = recovery_for(p, w, s)) rec->doorbell(tsc, s.pi, s.delta, kind);
    store_real(w, r.offset, v, blueflame ? body : nullptr);
    if (blueflame)
      for (int k = 1; k < 8; ++k) r.body[k] = body[k];
    r.forwarded = v;
    ++r.forwards;
    r.forwarded_tsc = tsc;
    r.forwarded_kind = kind;
    w.doorbells += r.send;
    w.last_written = i;
    if (forward_only && r.send && w.backlog_tail - w.backlog_head < WatchedPage::kBacklog)
      w.backlog[w.backlog_tail++ % WatchedPage::kBacklog] = WatchedPage::Forwarded{v, tsc, i, kind};
    if (sync) {
      r.recorded = v;
      if (counted) account(p, w, s, tsc, kind, true);
      return;
    }
  }
  // Values forwarded during a wait are recorded first, in their order (record_backlog).
  if (forward_only || r.recorded == r.forwarded || w.backlog_head != w.backlog_tail) return;
  r.recorded = r.forwarded;
  DoorbellTracker::Seen s{};
  if (r.send && observe_register(w, i, r.forwarded, &s)) account(p, w, s, r.forwarded_tsc, r.forwarded_kind, false);
}

// The SQ counter in a QP's doorbell record (the k-th QP of the page's UAR); false if it cannot be
// read (memory the driver does not describe, no pinned staging, a failed copy).
bool read_record(Poller& p, WatchedPage& w, const SendQueue& q, int k, uint16_t* pi) {
  uint32_t be = 0;
  if (q.dbr_memory == format::SqMemory::host) {
    be = __atomic_load_n(reinterpret_cast<const uint32_t*>(q.dbr_addr) + mlx5::kDbrSendIndex, __ATOMIC_ACQUIRE);
  } else if (q.dbr_memory == format::SqMemory::gpu && driver_calls_allowed()) {
    if (!w.dbr_staging) w.dbr_staging = static_cast<uint32_t*>(cuda::alloc_pinned(WatchedPage::kMaxSharers * sizeof(uint32_t)));
    if (!w.dbr_staging) return false;
    std::string why;
    cuda::DeviceCopyStream* st = p.streams.for_context(q.dbr_cu_context, &why);
    if (!st || !st->copy(w.dbr_staging + k, q.dbr_addr + 4 * mlx5::kDbrSendIndex, 4) || !st->wait(p.streams.while_waiting()))
      return false;
    be = __atomic_load_n(w.dbr_staging + k, __ATOMIC_ACQUIRE);
  } else {
    return false;
  }
  *pi = uint16_t(mlx5::be32(be));
  return true;
}

// Several QPs on one UAR page share its registers: a doorbell one QP rang can be overwritten by
// another QP's before the poller looks, and would never reach the NIC. Every writer updates its
// QP's doorbell record before it rings, so after each change on such a page, a QP whose record
// is ahead of what was forwarded for it gets a doorbell of its record's index, through the
// register it rang last (recorded as kind from_record; its own store, if it comes, is then not
// counted again).
void recover_from_records(Poller& p, WatchedPage& w) {
  const uint64_t version = send_queues_version();
  if (version != w.sharers_version) {
    w.sharer_count = send_queues_on_uar(w.device_context, w.page_id, w.sharers, WatchedPage::kMaxSharers);
    w.sharers_version = version;
  }
  if (w.sharer_count < 2) return;
  for (int k = 0; k < w.sharer_count; ++k) {
    const SendQueue& q = w.sharers[k];
    uint16_t pi = 0;
    DoorbellTracker::Slot* slot = w.tracker.slot_of(q.qpn, w.device_context);
    if (!slot || !read_record(p, w, q, k, &pi) || pi == slot->pi || uint16_t(pi - slot->pi) >= 0x8000) continue;
    const uint64_t value = mlx5::doorbell_value(pi, q.qpn), tsc = read_tsc();
    store_real(w, w.registers[slot->reg].offset, value, nullptr);
    ++w.doorbells;
    DoorbellTracker::Seen s = w.tracker.observe(value, w.device_context);
    if (s.slot) s.slot->from_record = true;
    account(p, w, s, tsc, format::DoorbellKind::from_record, false);
  }
}

// The doorbells forwarded while the poller waited, recorded in the order they went out (a wait
// within, for a copy, may add more: they are taken too).
void record_backlog(Poller& p, WatchedPage& w) {
  while (w.backlog_head != w.backlog_tail) {
    const WatchedPage::Forwarded f = w.backlog[w.backlog_head++ % WatchedPage::kBacklog];
    DoorbellRegister& r = w.registers[f.reg];
    r.recorded = f.value;
    DoorbellTracker::Seen s{};
    if (observe_register(w, f.reg, f.value, &s)) account(p, w, s, f.tsc, f.kind, false);
  }
}

// One look at every register of a page; true if any changed. When both halves of a BlueFlame
// pair changed since the last look and name the same QP, the one announcing the earlier index
// goes first, so the NIC sees them in the order they were written. forward_only: the poller is
// waiting for a copy; what it forwards now is recorded at its next full look.
bool poll_page(Poller& p, WatchedPage& w, bool forward_only = false) {
  if (!forward_only) record_backlog(p, w);
  uint64_t v[WatchedPage::kMaxRegisters], forwards[WatchedPage::kMaxRegisters];
  uint32_t due = 0, sent = 0;
  for (int i = 0; i < w.register_count; ++i) {
    const DoorbellRegister& r = w.registers[i];
    forwards[i] = r.forwards;
    v[i] = __atomic_load_n(reinterpret_cast<uint64_t*>(w.shadow + r.offset), __ATOMIC_ACQUIRE);
    if (v[i] != r.forwarded || (!forward_only && r.recorded != r.forwarded)) {
      due |= 1u << i;
      sent |= uint32_t(r.send) << i;
    }
  }
  if (!due) return false;
  for (int i = 0; i < w.register_count; ++i) {
    if (!(due >> i & 1)) continue;
    const int t = w.registers[i].twin;
    int first = i;
    if (t >= 0 && (due >> t & 1)) {
      const mlx5::Doorbell a = mlx5::decode_doorbell(v[i]), b = mlx5::decode_doorbell(v[t]);
      if (a.qpn == b.qpn && uint16_t(mlx5::announced_index(a) - mlx5::announced_index(b)) < 0x8000) first = t;  // b is earlier
    }
    handle_register(p, w, first, v[first], forwards[first], forward_only);
    due &= ~(1u << first);
    if (t >= 0 && (due >> t & 1)) {
      const int second = first == i ? t : i;
      handle_register(p, w, second, v[second], forwards[second], forward_only);
      due &= ~(1u << second);
    }
  }
  if (sent && !forward_only) recover_from_records(p, w);
  return true;
}

// While the poller waits for a copy (a WQE batch, a doorbell record), its pages' doorbells are
// still forwarded; they are recorded at its next look. Not in sync mode, whose point is that the
// WQEs are read before their doorbell goes out.
void forward_while_waiting(void* arg) {
  auto* p = static_cast<Poller*>(arg);
  if (!recovering_sync())
    for (auto& slot : p->pages)
      if (WatchedPage* w = slot.load(std::memory_order_acquire)) poll_page(*p, *w, true);
  cpu_relax();
}

void record_poller(uint64_t event, uint32_t pages, uint64_t doorbells, uint64_t cpu_ns, uint64_t wall_ns, int cpu,
                   uint64_t untracked) {
  if (!recording() || g_settings.aggregate) return;
  record<EventType::gpu_poller>(event, uint64_t{pages}, doorbells, cpu_ns, wall_ns, static_cast<uint64_t>(g_settings.wait),
                                int64_t{cpu}, untracked);
}

// On the poller thread: what it holds in the context being ended, let go of.
void let_go_of_context(Poller& p) {
  const uint64_t epoch = g_context_epoch.load(std::memory_order_acquire);
  if (epoch == p.context_epoch_done.load(std::memory_order_relaxed)) return;
  const uintptr_t context = g_ending_context.load(std::memory_order_acquire);
  const bool alive = g_ending_alive.load(std::memory_order_acquire);
  for (auto& slot : p.pages)
    if (WatchedPage* w = slot.load(std::memory_order_acquire))
      w->tracker.for_each([&](DoorbellTracker::Slot& s) {
        if (s.recovery) s.recovery->context_gone(context, alive);
      });
  p.streams.forget(context, alive);
  p.context_epoch_done.store(epoch, std::memory_order_release);
}

void* poller_main(void* arg) {
  auto* p = static_cast<Poller*>(arg);
  char name[16];
  snprintf(name, sizeof name, "sigmatrace-db%d", p->index);
  pthread_setname_np(pthread_self(), name);
  // The poller's copies and event queries must never invalidate an application thread's
  // stream capture (CUDA graphs), which the default (global) capture mode would.
  cuda::relax_stream_capture_on_this_thread();
  p->streams.set_while_waiting({&forward_while_waiting, p});
  const uint64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID), wall0 = now_ns(CLOCK_MONOTONIC);
  record_poller(1, 0, 0, 0, 0, p->placement.cpu, 0);
  uint64_t doorbells = 0, untracked = 0;
  uint32_t pages_served = 0, pauses = 1;
  uint64_t idle_rounds = 0;
  uint64_t idle_since = 0;
  MarkerLooks marker_looks;
  bool sleeping = false;  // idle for longer than SIGMATRACE_DOORBELL_SPIN_MS: one look every 20 us
  bool totals_recorded = false;
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
      uint64_t db = doorbells;
      uint32_t served = pages_served;
      for (auto& slot : p->pages)
        if (WatchedPage* w = slot.load(std::memory_order_acquire)) {
          poll_page(*p, *w);
          for_each_recovery(*w, RecoveryStep::report);
          db += w->doorbells, ++served;
        }
      // The process is exiting with pages still mapped: this poller goes on forwarding until the
      // end, and its totals are recorded now, while the profiler still records.
      if (g_exiting.load(std::memory_order_acquire) && !totals_recorded) {
        record_poller(2, served, db, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, now_ns(CLOCK_MONOTONIC) - wall0, p->placement.cpu, untracked);
        totals_recorded = true;
      }
      if (markers_due()) cuda::resolve_kernel_markers();
      p->reports_done.store(asked, std::memory_order_release);
    }
    let_go_of_context(*p);
    p->passes.fetch_add(1, std::memory_order_release);
    if (any) {
      marker_looks.doorbell_since = true;
      idle_rounds = 0;
      pauses = 1;
      sleeping = false;
      continue;
    }
    if (idle_rounds < kHotRounds) {
      if (++idle_rounds == kCopyIdleRounds) {  // nothing to forward: time for the WQE copies
        for (auto& slot : p->pages)
          if (WatchedPage* w = slot.load(std::memory_order_acquire)) for_each_recovery(*w, RecoveryStep::copy);
      }
      if (idle_rounds >= kCopyIdleRounds && (idle_rounds & 15) == 0 && marker_looks.due(PollerPace::awake)) cuda::resolve_kernel_markers();
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
      if (marker_looks.due(PollerPace::sleeping)) cuda::resolve_kernel_markers();
      continue;
    }
    if ((idle_rounds & 15) == 0 && marker_looks.due(PollerPace::awake)) cuda::resolve_kernel_markers();
    if (seen == 1 && g_settings.wait != format::PollerWait::pause) {
      // On the line written last (the next store most likely goes there), every register looked
      // at again once it is armed; the deadline bounds a store to another line.
      wait_for_write(g_settings.wait, only->shadow + only->registers[only->last_written].offset, kMonitorCycles, &page_idle, only);
      continue;
    }
    if (p->placement.shared && pauses == kMaxBackoffPauses) {
      sched_yield();  // an application thread that wants this CPU gets it
      continue;
    }
    for (uint32_t i = 0; i < pauses; ++i) cpu_relax();
    if (pauses < kMaxBackoffPauses) pauses *= 2;
  }
  if (driver_calls_allowed()) p->streams.close_all();
  if (!totals_recorded)
    record_poller(2, pages_served, doorbells, now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, now_ns(CLOCK_MONOTONIC) - wall0, p->placement.cpu, untracked);
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
  p->context_epoch_done.store(g_context_epoch.load(std::memory_order_acquire), std::memory_order_relaxed);
  // SIGMATRACE_DOORBELL_CPUS is shared out among the node's processes by local rank; without it
  // a poller takes a CPU outside the application's affinity mask where there is one.
  p->placement = choose_poller_cpu(g_settings.cpus, size_t(g_local_rank + p->index));
  int rc = EAGAIN;
  for (int attempt = 0; attempt < 2 && rc != 0; ++attempt) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (p->placement.cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(p->placement.cpu, &set);
      pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    rc = pthread_create(&p->thread, &attr, &poller_main, p);
    pthread_attr_destroy(&attr);
    // A CPU outside this cgroup's cpuset is refused: the poller then takes the application's.
    if (rc != EINVAL || p->placement.cpu < 0 || !g_settings.cpus.empty()) break;
    release_poller_cpu(&p->placement);
  }
  if (rc != 0) {
    *why = std::string("cannot start a poller thread: ") + strerror(rc);
    release_poller_cpu(&p->placement);
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
  on_first_watch();
  Poller* p = nullptr;
  for (Poller* q : g_pollers)
    if (q && !q->stuck && q->page_count < g_settings.pages_per_poller) {
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

bool unwatch(WatchedPage* page) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Poller*& p : g_pollers) {
    if (!p) continue;
    bool here = false;
    for (auto& slot : p->pages) here |= slot.load(std::memory_order_acquire) == page;
    if (!here) continue;
    if (p->stuck) return false;
    page->state.store(page_retiring, std::memory_order_release);
    // The poller makes its last pass over the page within a round, unless it is stuck (in a
    // driver call): then its pages, and the poller, are left as they are rather than freed under
    // it — pages and a thread leaked, said once, instead of a use after free.
    for (int i = 0; i < 200000 && page->state.load(std::memory_order_acquire) != page_retired; ++i) {
      timespec ts{0, 5000};
      nanosleep(&ts, nullptr);
    }
    if (page->state.load(std::memory_order_acquire) != page_retired) {
      log_line("a doorbell poller did not release its page within 1 s: its pages are left mapped and the poller running");
      p->stuck = true;
      return false;
    }
    if (--p->page_count == 0) {
      p->stop.store(true, std::memory_order_release);
      pthread_join(p->thread, nullptr);
      release_poller_cpu(&p->placement);
      delete p;
      p = nullptr;
    }
    return true;
  }
  return true;
}

uint32_t release_context(uintptr_t context, bool alive) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ending_context.store(context, std::memory_order_release);
  g_ending_alive.store(alive, std::memory_order_release);
  const uint64_t epoch = g_context_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  const uint64_t deadline = now_ns(CLOCK_MONOTONIC) + 200000000ull;
  uint32_t released = 0;
  for (Poller* p : g_pollers) {
    if (!p) continue;
    while (p->context_epoch_done.load(std::memory_order_acquire) < epoch && now_ns(CLOCK_MONOTONIC) < deadline) {
      timespec ts{0, 10000};
      nanosleep(&ts, nullptr);
    }
    released += p->context_epoch_done.load(std::memory_order_acquire) >= epoch;
  }
  return released;
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
