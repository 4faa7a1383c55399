// Control-path calls (open, alloc, reg_mr, create/modify/destroy of QPs and CQs, devx commands) as
// slices with their real duration. The profiler records a call's events when the call returns and
// then, on the same thread, a call_span saying how many ticks earlier the call began; a call's
// record is therefore held per thread until its span (or the thread's next call) arrives. Files
// written before call_span existed give instants, as before.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "analysis/clock_normalization.h"
#include "analysis/records.h"

namespace sigmatrace::analysis {

class CallSpans {
 public:
  CallSpans(FileSink* sink, const ClockModel& clock) : sink_(sink), clock_(clock) {}
  // A control call that returned at r.ts_ns (recorded by its thread): handed on when its span comes.
  void call(const CallRecord& r);
  // call_span: the thread's last call began `ticks` before `tsc` (when the call_span was stamped).
  void span(int64_t thread, uint64_t tsc, uint64_t ticks);
  void flush();  // at the end of the file: calls without a span stay instants

 private:
  FileSink* sink_;
  const ClockModel& clock_;
  std::unordered_map<int64_t, CallRecord> waiting_;  // per thread
};

}  // namespace sigmatrace::analysis
