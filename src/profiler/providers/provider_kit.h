// What every provider's wrappers share, defined once: the export macro, the errno keeper, the
// per-provider re-entry guard. A provider is one directory under
// src/profiler/providers/, a `Provider` object (provider.h) naming its init function, its on/off
// switch and its symbols, and one line in provider_list.h; docs/writing-a-provider.md walks
// through it.
//
// Everything here runs on application threads inside wrappers: no locks, no allocation, no
// system calls.
#pragma once
#include <cerrno>

#include "format/event_types.h"
#include "profiler/runtime/recorder.h"

// A function the profiler exports in place of a library's (the export map, generated from the
// providers' symbol lists, makes it visible).
#define SIGMATRACE_EXPORT extern "C" __attribute__((visibility("default")))

namespace sigmatrace::profiler::kit {

// Recording must not change errno as the caller sees it.
struct ErrnoKeeper {
  int saved = errno;
  ~ErrnoKeeper() { errno = saved; }
};

// True for the outermost traced call of one provider on this thread: libraries call their own
// exported functions through their PLT (ucp_tag_send_nb -> ucp_tag_send_nbx), which the preload
// also catches; only the application's call is recorded. One depth per provider (Tag), so a UCX
// call that posts verbs work still records both layers. initial-exec TLS: a plain %fs load, no
// __tls_get_addr on the data path.
template <typename Tag>
struct Reentry {
  static inline thread_local int depth __attribute__((tls_model("initial-exec"))) = 0;
  bool outer;
  Reentry() : outer(depth++ == 0) {}
  ~Reentry() { --depth; }
  Reentry(const Reentry&) = delete;
  Reentry& operator=(const Reentry&) = delete;
  static bool inside() { return depth != 0; }
};

// Times one control-path call (open, alloc, reg_mr, create/modify/destroy, devx commands): when
// the call recorded events on this thread, a call_span after them says how long before it began,
// so the timeline shows the call's duration. Declared first in the wrapper (before the call), it
// records last (after the wrapper's own events); two RDTSCs per call, on the control path only.
class ControlSpan {
 public:
  ControlSpan() : entry_(read_tsc()), mark_(t_state.cur) {}
  ~ControlSpan() {
    if (t_state.cur == mark_) return;  // nothing recorded: not traced, nested, or dropping
    const int saved = errno;
    // The span is stamped with the very reading its duration ends at: record() would read the
    // clock again after reserving room, and a thread preempted between the two readings got a
    // span that began after the call's own events (VerbsProbe's check flaked on it under load).
    const uint64_t end = read_tsc();
    record_at<format::EventType::call_span>(end, end - entry_);
    errno = saved;
  }
  ControlSpan(const ControlSpan&) = delete;
  ControlSpan& operator=(const ControlSpan&) = delete;

 private:
  uint64_t entry_;
  const uint8_t* mark_;
};

}  // namespace sigmatrace::profiler::kit

// The head of a control-path wrapper: times the call (kit::ControlSpan), looks up the real function
// `symbol` (a RealSymbol) as `fn` and fails with ENOSYS, returning `fail`, without it; then enters
// the provider's re-entry guard (its `Reentry` in scope) as `guard`.
#define SIGMATRACE_CONTROL_CALL(symbol, type, fail)               \
  ::sigmatrace::profiler::kit::ControlSpan control_span;          \
  auto fn = real_function<type>(symbol);                          \
  if (__builtin_expect(fn == nullptr, 0)) {                       \
    errno = ENOSYS;                                               \
    return fail;                                                  \
  }                                                               \
  Reentry guard
