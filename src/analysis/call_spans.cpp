// See call_spans.h.
#include "analysis/call_spans.h"

#include <algorithm>
#include <vector>

namespace sigmatrace::analysis {

void CallSpans::call(const CallRecord& r) {
  if (!sink_) return;
  auto [it, fresh] = waiting_.try_emplace(r.thread_id, r);
  if (!fresh) {
    sink_->call(it->second);  // its span was lost (or the call was too old to have one)
    it->second = r;
  }
}

void CallSpans::span(int64_t thread, uint64_t tsc, uint64_t ticks) {
  auto it = waiting_.find(thread);
  if (it == waiting_.end()) return;  // a call that recorded only an error or an async event
  CallRecord r = it->second;
  waiting_.erase(it);
  const int64_t begin = clock_.to_ns(tsc - ticks), end = clock_.to_ns(tsc);
  // The call's own events were stamped between its entry and the span.
  if (begin <= r.ts_ns && r.ts_ns <= end) r.ts_ns = begin, r.dur_ns = end - begin;
  sink_->call(r);
}

void CallSpans::flush() {
  if (!sink_) return;
  std::vector<CallRecord> left;
  for (const auto& [thread, r] : waiting_) left.push_back(r);
  std::sort(left.begin(), left.end(), [](const CallRecord& a, const CallRecord& b) { return a.ts_ns < b.ts_ns; });
  for (const CallRecord& r : left) sink_->call(r);
  waiting_.clear();
}

}  // namespace sigmatrace::analysis
