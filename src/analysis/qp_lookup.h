// Which QP of a process a data-path event's QP number means, at the event's time: the numbers a
// single QP used (the common case) need no lifetime check, through a small direct-mapped cache;
// a reused number is looked up by creation time. One per analysed file, shared by the verbs and
// GPU associations of that file (one thread).
#pragma once
#include <cstdint>
#include <unordered_map>

#include "analysis/experiment_model.h"

namespace sigmatrace::analysis {

class QpLookup {
 public:
  // unknown: counts the numbers no QP of the trace had.
  QpLookup(const ExperimentModel& m, const ProcessRow& p, uint64_t* unknown) : m_(m), p_(p), unknown_(unknown) {
    for (const auto& [num, ids] : p.qps_by_num)
      if (ids.size() == 1) unique_[num] = ids.front();
  }
  int64_t operator()(uint64_t qp_num, uint64_t tsc) {
    Slot& c = cache_[qp_num % kCache];
    if (c.qp_num == qp_num && c.qp_id != kNone) return c.qp_id;
    auto it = unique_.find(static_cast<uint32_t>(qp_num));
    if (it != unique_.end()) {
      c = {qp_num, it->second};
      return it->second;
    }
    int64_t q = m_.qp_at(p_.process_id, qp_num, tsc);
    if (q == kNone) ++*unknown_;
    return q;
  }

 private:
  struct Slot {
    uint64_t qp_num = ~0ull;
    int64_t qp_id = kNone;
  };
  static constexpr size_t kCache = 256;
  const ExperimentModel& m_;
  const ProcessRow& p_;
  uint64_t* unknown_;
  Slot cache_[kCache];
  std::unordered_map<uint32_t, int64_t> unique_;
};

}  // namespace sigmatrace::analysis
