#include "profiler/gpu/kernel_markers.h"

#include <time.h>

#include <atomic>
#include <mutex>

#include "format/event_types.h"
#include "profiler/runtime/hang_watch.h"
#include "profiler/runtime/real_symbols.h"
#include "profiler/runtime/recorder.h"
#include "profiler/runtime/tsc.h"

namespace sigmatrace::profiler::cuda {

namespace {

constexpr unsigned kEventDefault = 0;        // CU_EVENT_DEFAULT: timing enabled
constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
constexpr unsigned kStreamNonBlocking = 1;
const uintptr_t kLegacyStream = 1, kPerThreadStream = 2;  // CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
constexpr size_t kMaxMarkers = 8192;          // kernels in flight at once
constexpr size_t kMaxContexts = 16;
constexpr uint64_t kRecalibrateNs = 100000000;  // the GPU's clock drifts against the TSC

RealSymbol g_ctx_get_current{"cuCtxGetCurrent", "libcuda.so.1", {}, {}};
RealSymbol g_ctx_set_current{"cuCtxSetCurrent", "libcuda.so.1", {}, {}};
RealSymbol g_stream_is_capturing{"cuStreamIsCapturing", "libcuda.so.1", {}, {}};
RealSymbol g_stream_create{"cuStreamCreate", "libcuda.so.1", {}, {}};
RealSymbol g_event_create{"cuEventCreate", "libcuda.so.1", {}, {}};
RealSymbol g_event_record{"cuEventRecord", "libcuda.so.1", {}, {}};
RealSymbol g_event_query{"cuEventQuery", "libcuda.so.1", {}, {}};
RealSymbol g_event_synchronize{"cuEventSynchronize", "libcuda.so.1", {}, {}};
RealSymbol g_event_elapsed{"cuEventElapsedTime", "libcuda.so.1", {}, {}};
RealSymbol g_event_destroy{"cuEventDestroy_v2", "libcuda.so.1", {}, {}};
RealSymbol g_stream_destroy{"cuStreamDestroy_v2", "libcuda.so.1", {}, {}};

struct Marker {
  CUevent event;
  CUcontext context;
  CUstream stream;
  uintptr_t function;
  int64_t device;
  uint64_t launch_tsc;
  uint64_t running_tsc;  // the last look that found it (or its stream before it) unfinished
};

// Per context: free events, and the reference that maps its event clock to the TSC.
struct ContextState {
  CUcontext context = nullptr;
  CUstream stream = nullptr;   // the profiler's own, for the reference event
  CUevent ref = nullptr;
  uint64_t ref_tsc = 0, ref_at_ns = 0;
  CUevent free_events[64];
  int nfree = 0;
};

std::mutex g_mutex;
Marker g_markers[kMaxMarkers];
size_t g_count = 0;
ContextState g_contexts[kMaxContexts];
size_t g_ncontexts = 0;
std::atomic<bool> g_resolving{false};
std::atomic<KernelMarkers> g_mode{KernelMarkers::on};
std::atomic<uint64_t> g_dropped{0}, g_marked{0}, g_resolved{0};
std::atomic<size_t> g_pending{0};

// Markers not yet settled are kernels still running (or finished less than a poller's look ago):
// for the pollers, and for the hang watch, to which a running kernel is work outstanding. Under g_mutex.
void publish_pending() {
  g_pending.store(g_count, std::memory_order_release);
  g_work.gpu_kernels_running.store(g_count, std::memory_order_relaxed);
}

template <typename Fn>
Fn fn(RealSymbol& s) {
  s.logged.store(true, std::memory_order_relaxed);  // an old driver without one: no markers
  return real_function<Fn>(s);
}

ContextState* state_of(CUcontext c) {
  for (size_t i = 0; i < g_ncontexts; ++i)
    if (g_contexts[i].context == c) return &g_contexts[i];
  if (g_ncontexts == kMaxContexts) return nullptr;
  g_contexts[g_ncontexts].context = c;
  return &g_contexts[g_ncontexts++];
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A reference event on the profiler's own (idle) stream, recorded between two TSC reads: its
// GPU time is taken as their midpoint. A bracket wider than 50 us (the thread was descheduled)
// is tried again, three times at most.
bool calibrate(ContextState* s) {
  auto create_stream = fn<CUresult (*)(CUstream*, unsigned)>(g_stream_create);
  auto create_event = fn<CUresult (*)(CUevent*, unsigned)>(g_event_create);
  auto record = fn<CUresult (*)(CUevent, CUstream)>(g_event_record);
  auto sync = fn<CUresult (*)(CUevent)>(g_event_synchronize);
  if (!create_stream || !create_event || !record || !sync) return false;
  if (!s->stream && create_stream(&s->stream, kStreamNonBlocking) != kSuccess) return s->stream = nullptr, false;
  if (!s->ref && create_event(&s->ref, kEventDefault) != kSuccess) return s->ref = nullptr, false;
  for (int i = 0; i < 3; ++i) {
    const uint64_t ns0 = monotonic_ns(), t0 = read_tsc();
    if (record(s->ref, s->stream) != kSuccess || sync(s->ref) != kSuccess) return false;
    const uint64_t t1 = read_tsc(), ns1 = monotonic_ns();
    s->ref_tsc = t0 + (t1 - t0) / 2;
    s->ref_at_ns = ns1;
    if (ns1 - ns0 < 50000) break;
  }
  return true;
}

// One pass over the markers. A stream's work completes in order, so once its oldest marker is
// found unfinished, its later ones are not asked about: they were unfinished then too. A context
// made current once serves the pass's other markers in it.
class Pass {
 public:
  // When m's stream was found unfinished in this pass (0: it was not).
  uint64_t stream_busy_at(const Marker& m) const {
    for (int i = 0; i < n_; ++i)
      if (busy_[i].stream == m.stream && busy_[i].context == m.context) return busy_[i].tsc;
    return 0;
  }
  void saw_busy(const Marker& m, uint64_t tsc) {
    if (n_ < kStreams) busy_[n_++] = Busy{m.context, m.stream, tsc};
  }
  CUcontext current = nullptr;

 private:
  static constexpr int kStreams = 32;  // streams with kernels in flight; more are simply asked
  struct Busy {
    CUcontext context;
    CUstream stream;
    uint64_t tsc;
  };
  Busy busy_[kStreams];
  int n_ = 0;
};

// Keeps a finished marker's event for the next launch in its context (a few), or destroys it.
void give_back(ContextState* s, CUevent ev) {
  auto destroy = fn<CUresult (*)(CUevent)>(g_event_destroy);
  if (s && s->nfree < int(sizeof s->free_events / sizeof s->free_events[0])) s->free_events[s->nfree++] = ev;
  else if (destroy) destroy(ev);
}

// A marker whose kernel finished gets its end recorded (cuda_kernel_seen_end; cuda_kernel_end
// with timed markers, dropped when it cannot be timed) and its event given back: true. False
// while the kernel runs (its running_tsc moved on), or when the driver calls are missing. Makes
// the marker's context current on the calling thread. Under g_mutex.
bool settle(Marker& m, Pass& pass) {
  if (const uint64_t busy = pass.stream_busy_at(m)) {
    m.running_tsc = busy;
    return false;
  }
  const bool timed = g_mode.load(std::memory_order_relaxed) == KernelMarkers::timed;
  auto query = fn<CUresult (*)(CUevent)>(g_event_query);
  auto elapsed = fn<CUresult (*)(float*, CUevent, CUevent)>(g_event_elapsed);
  auto set_current = fn<CUresult (*)(CUcontext)>(g_ctx_set_current);
  ContextState* s = state_of(m.context);
  if (!query || (timed && !elapsed) || !set_current || !s) return false;
  if (pass.current != m.context) {
    if (set_current(m.context) != kSuccess) {  // the context is gone, and its events with it
      g_dropped.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    pass.current = m.context;
  }
  const uint64_t asked_tsc = read_tsc();  // running at least until then, if not ready
  const CUresult q = query(m.event);
  if (q == kErrorNotReady) {
    m.running_tsc = asked_tsc;
    pass.saw_busy(m, asked_tsc);
    return false;
  }
  bool recorded = false;
  if (q == kSuccess && !timed) {
    record<format::EventType::cuda_kernel_seen_end>(uint64_t{m.function}, reinterpret_cast<uint64_t>(m.stream), m.device,
                                                    m.launch_tsc, m.running_tsc);
    recorded = true;
  } else if (q == kSuccess) {
    float ms = 0;
    const bool fresh = s->ref && monotonic_ns() - s->ref_at_ns < kRecalibrateNs;
    if ((fresh || calibrate(s)) && elapsed(&ms, s->ref, m.event) == kSuccess) {
      record<format::EventType::cuda_kernel_end>(uint64_t{m.function}, reinterpret_cast<uint64_t>(m.stream), m.device, m.launch_tsc,
                                                 s->ref_tsc, static_cast<int64_t>(double(ms) * 1e6));
      recorded = true;
    }
  }
  (recorded ? g_resolved : g_dropped).fetch_add(1, std::memory_order_relaxed);
  give_back(s, m.event);
  return true;
}

// Settling makes each marker's context current on the calling thread; on an application's
// thread (a context's end, the exit) the context it had is put back.
class CurrentContextKept {
 public:
  CurrentContextKept() {
    auto get = fn<CUresult (*)(CUcontext*)>(g_ctx_get_current);
    set_ = fn<CUresult (*)(CUcontext)>(g_ctx_set_current);
    kept_ = get && set_ && get(&context_) == kSuccess;
  }
  ~CurrentContextKept() {
    if (kept_) set_(context_);
  }
  bool kept() const { return kept_; }

 private:
  CUresult (*set_)(CUcontext) = nullptr;
  CUcontext context_ = nullptr;
  bool kept_ = false;
};

}  // namespace

bool mark_kernel_end(uint64_t launch_tsc, uintptr_t function, CUstream stream, int64_t device) {
  const auto st = reinterpret_cast<uintptr_t>(stream);
  const KernelMarkers mode = g_mode.load(std::memory_order_relaxed);
  if (st == 0 || st == kLegacyStream || st == kPerThreadStream || mode == KernelMarkers::off) return false;
  auto capturing = fn<CUresult (*)(CUstream, int*)>(g_stream_is_capturing);
  auto current = fn<CUresult (*)(CUcontext*)>(g_ctx_get_current);
  auto create_event = fn<CUresult (*)(CUevent*, unsigned)>(g_event_create);
  auto record = fn<CUresult (*)(CUevent, CUstream)>(g_event_record);
  int status = 0;
  CUcontext ctx = nullptr;
  if (!capturing || !current || !create_event || !record || capturing(stream, &status) != kSuccess || status != 0 ||
      current(&ctx) != kSuccess || !ctx)
    return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  ContextState* s = state_of(ctx);
  CUevent ev = nullptr;
  if (!s || g_count == kMaxMarkers) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (s->nfree) ev = s->free_events[--s->nfree];
  else if (create_event(&ev, mode == KernelMarkers::timed ? kEventDefault : kEventDisableTiming) != kSuccess) ev = nullptr;
  if (!ev || record(ev, stream) != kSuccess) {
    if (ev) give_back(s, ev);
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  g_markers[g_count++] = Marker{ev, ctx, stream, function, device, launch_tsc, launch_tsc};
  g_marked.fetch_add(1, std::memory_order_relaxed);
  publish_pending();
  return true;
}

void enable_kernel_markers(KernelMarkers mode) { g_mode.store(mode, std::memory_order_relaxed); }

KernelMarkers kernel_markers_mode() { return g_mode.load(std::memory_order_relaxed); }

bool kernel_markers_pending() { return g_pending.load(std::memory_order_acquire) != 0; }

void resolve_kernel_markers() {
  if (g_resolving.exchange(true, std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  const CurrentContextKept current;
  Pass pass;
  size_t kept = 0;
  for (size_t i = 0; i < g_count; ++i)
    if (!settle(g_markers[i], pass)) g_markers[kept++] = g_markers[i];
  g_count = kept;
  publish_pending();
  g_resolving.store(false, std::memory_order_release);
}

uint64_t forget_context_markers(uintptr_t context, bool alive) {
  const auto c = reinterpret_cast<CUcontext>(context);
  auto destroy_event = fn<CUresult (*)(CUevent)>(g_event_destroy);
  auto destroy_stream = fn<CUresult (*)(CUstream)>(g_stream_destroy);
  std::lock_guard<std::mutex> lock(g_mutex);
  // A live context's finished kernels still get their ends: pollers ask about markers only now
  // and then, and a program's last kernels usually finish just before it ends its context.
  const CurrentContextKept current;
  const bool settling = alive && current.kept();
  uint64_t dropped = 0;
  size_t kept = 0;
  Pass pass;
  for (size_t i = 0; i < g_count; ++i) {
    if (g_markers[i].context != c) {
      g_markers[kept++] = g_markers[i];
      continue;
    }
    if (settling && settle(g_markers[i], pass)) continue;
    if (alive && destroy_event) destroy_event(g_markers[i].event);
    ++dropped;
  }
  g_count = kept;
  publish_pending();
  g_dropped.fetch_add(dropped, std::memory_order_relaxed);
  for (size_t i = 0; i < g_ncontexts; ++i) {
    ContextState& s = g_contexts[i];
    if (s.context != c) continue;
    if (alive) {
      for (int k = 0; k < s.nfree && destroy_event; ++k) destroy_event(s.free_events[k]);
      if (s.ref && destroy_event) destroy_event(s.ref);
      if (s.stream && destroy_stream) destroy_stream(s.stream);
    }
    g_contexts[i] = g_contexts[--g_ncontexts];  // its slot for another context (a handle reused is a new one)
    g_contexts[g_ncontexts] = ContextState{};
    break;
  }
  return dropped;
}

void report_kernel_markers() {
  const uint64_t marked = g_marked.load(std::memory_order_relaxed);
  if (!marked) return;
  record<format::EventType::cuda_kernel_markers>(marked, g_resolved.load(std::memory_order_relaxed),
                                                 g_dropped.load(std::memory_order_relaxed),
                                                 uint64_t{g_pending.load(std::memory_order_acquire)});
}

}  // namespace sigmatrace::profiler::cuda
