// What the verbs data-path wrappers (ibverbs_context_ops.cpp, ibverbs_extended_ops.cpp) and the
// code that installs them (ibverbs_dispatch_patch.cpp) share. Each wrapper is instantiated once per
// trace mode and the set for the run's mode is installed, so the mode costs the data path no branch.
#pragma once
#include "profiler/providers/verbs/ibverbs_state.h"

namespace sigmatrace::profiler::ibv {

inline constexpr TraceMode kAggregate = TraceMode::aggregate;
inline constexpr TraceMode kSimple = TraceMode::simple;
inline constexpr TraceMode kFull = TraceMode::full;

// The run's instance of a per-mode set: by_mode is {aggregate, simple, full}.
template <typename Set>
const Set& for_trace_mode(const Set (&by_mode)[3]) {
  switch (g_mode) {
    case TraceMode::aggregate: return by_mode[0];
    case TraceMode::full: return by_mode[2];
    default: return by_mode[1];
  }
}

// An object reached a wrapper without being registered (a table patched behind our back): said
// once; the call fails with ENOSYS.
[[gnu::noinline, gnu::cold]] void object_not_tracked(const char* what);

[[gnu::always_inline]] inline uint64_t sge_bytes(const ibv_sge* sg, int n) {
  uint64_t b = 0;
  for (int i = 0; i < n; ++i) b += sg[i].length;
  return b;
}

// The integer fields of an ibv_post_send event: both post_send and an ibv_wr_* batch's
// wr_complete record one (in Simple mode before the call, amended when it fails).
inline constexpr uint32_t kPostSendWords = format::kEventWordFields<format::EventType::ibv_post_send>;

// A QP's ibv_wr_* batch is empty again (after wr_complete or wr_abort, and when it is registered).
inline void reset_batch(QpState* s) {
  s->wr.open = false;
  for (uint64_t m = s->batch_opcode_mask; m; m &= m - 1) {
    const int op = __builtin_ctzll(m);
    if (op < static_cast<int>(kBatchOpcodes)) s->batch_wrs_by_opcode[op] = 0, s->batch_bytes_by_opcode[op] = 0;
  }
  s->batch_wrs = 0;
  s->batch_bytes = 0;
  s->batch_opcode_mask = 0;
}

// ibverbs_context_ops.cpp: the context ops (post_send, post_recv, post_srq_recv, poll_cq,
// req_notify_cq). remember_context_ops takes note of a new context's real ops before its table is
// patched; install_context_ops then puts the wrappers into the table.
void remember_context_ops(const ContextState& c);
void install_context_ops(const ContextState& c, ibv_context* ctx);

// ibverbs_extended_ops.cpp: the ibv_qp_ex builders and the ibv_cq_ex polls of the run's mode.
struct CqExPollOps {
  decltype(ibv_cq_ex::start_poll) start_poll;
  decltype(ibv_cq_ex::next_poll) next_poll;
};
const QpExReal& qp_ex_hooks();
const CqExPollOps& cq_ex_hooks();

}  // namespace sigmatrace::profiler::ibv
