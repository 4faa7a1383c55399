// The "user" provider: sigmatrace_user_mark(), an annotation API for applications (and the
// runtime's own tests and benchmarks). Works in every mode: a timestamped event in simple/full, a
// counter per mark id in aggregate mode.
#include "profiler/providers/provider.h"
#include "profiler/runtime/recorder.h"
#include "profiler/runtime/runtime.h"

namespace sigmatrace::profiler {

std::atomic<bool> g_user_marks_active{false};

namespace {
bool g_aggregate = false;
bool init_user_marks(const Config& config, std::string*) {
  g_aggregate = config.mode == TraceMode::aggregate;
  return true;
}
}  // namespace

namespace {
const char* const kUserExports[] = {"sigmatrace_user_mark"};  // include/sigmatrace.h
}  // namespace
extern const Provider kUserMarksProvider = {"user", "application annotations through sigmatrace_user_mark()",
                                            &init_user_marks, &g_user_marks_active, nullptr, {}, kUserExports};

}  // namespace sigmatrace::profiler

SIGMATRACE_EXPORT void sigmatrace_user_mark(uint64_t id, uint64_t value) {
  using namespace sigmatrace::profiler;
  if (!g_user_marks_active.load(std::memory_order_relaxed)) return;
  if (g_aggregate)
    aggregate_add(sigmatrace::format::AggregateKey::user_mark, id, 0, value);
  else
    record<sigmatrace::format::EventType::user_mark>(id, value);
}
