// See kernel_phases.h.
#include "analysis/kernel_phases.h"

#include <algorithm>

namespace sigmatrace::analysis {

void KernelPhaseBuilder::add(KernelPhases* to, int64_t ts_ns, uint64_t op_id, uint64_t launch_tsc, bool data, uint64_t ops, uint64_t bytes) {
  window_.push(Pending{ts_ns, op_id, launch_tsc, ops, bytes, to, data});
  if (window_.size() <= kPhaseReorderOps) return;
  place(window_.top());
  window_.pop();
}

void KernelPhaseBuilder::finish() {
  for (; !window_.empty(); window_.pop()) place(window_.top());
}

// A new phase begins where the kind of operation or the launch changes.
void KernelPhaseBuilder::place(const Pending& p) {
  KernelPhases& k = *p.to;
  const bool first = k.launches == 0;
  const bool new_launch = first || p.launch_tsc != k.last_launch_tsc;
  if (new_launch) ++k.launches, k.last_launch_tsc = p.launch_tsc;
  if (!first && p.ts_ns < k.last_ns) ++k.ops_out_of_order;
  k.last_ns = std::max(k.last_ns, p.ts_ns);
  if (!new_launch && p.data == k.last_data) {
    if (k.dropped) return;  // the phase going on is one of the dropped ones
    KernelPhase& ph = k.phases.back();
    ph.last_ns = std::max(ph.last_ns, p.ts_ns);
    ph.ops += p.ops;
    ph.bytes += p.bytes;
    return;
  }
  k.last_data = p.data;
  if (k.phases.size() == kMaxKernelPhases) {
    ++k.dropped;
    return;
  }
  k.phases.push_back(KernelPhase{p.data, k.launches - 1, p.ts_ns, p.ts_ns, p.ops, p.bytes});
}

}  // namespace sigmatrace::analysis
