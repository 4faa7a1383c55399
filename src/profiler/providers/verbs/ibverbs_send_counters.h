// Aggregate mode's send counters, shared by the two ways a send is posted: ibv_post_send's wrapper
// (ibverbs_context_ops.cpp) and the ibv_wr_* builders' (ibverbs_extended_ops.cpp).
#pragma once
#include "profiler/providers/verbs/ibverbs_state.h"

namespace sigmatrace::profiler::ibv {

// Aggregate mode: the last (QP, opcode) this thread counted, its peer and its two counter entries,
// so a thread that keeps posting the same kind of WR on the same QP updates them with no hashing
// and no QP lookup, as long as no QP changed its endpoints since (g_endpoint_generation).
struct SendCounterMemo {
  const void* qp;
  uint64_t qp_num_opcode;  // qp_num << 32 | opcode
  uint64_t generation;     // g_endpoint_generation when made; never matches while 0 (unset) memo
  AggregateEntry* by_opcode;
  AggregateEntry* by_pair;  // null until the QP is connected
};
inline thread_local SendCounterMemo t_send_memo __attribute__((tls_model("initial-exec"))) = {};

[[gnu::always_inline]] inline uint64_t memo_generation() {
  return uint64_t{g_endpoint_generation.load(std::memory_order_relaxed)} | (uint64_t{1} << 32);
}

// The memo missed: finds (or makes) the QP's counter entries, counts, and remembers them.
void count_send_slow(SendCounterMemo& m, const void* qp, uint32_t qpn, uint32_t opcode, uint64_t local, uint64_t remote,
                     uint64_t bytes, uint64_t generation, uint64_t wrs = 1);
// As count_send_slow, with the QP's endpoints looked up first.
void count_send_lookup(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t generation, uint64_t wrs = 1);

// True when the memo counted them (wrs WRs of this opcode, bytes in all).
[[gnu::always_inline]] inline bool count_send_memo(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t generation,
                                                   uint64_t wrs = 1) {
  SendCounterMemo& m = t_send_memo;
  if (__builtin_expect(m.qp == qp && m.qp_num_opcode == ((uint64_t{qpn} << 32) | opcode) && m.generation == generation, 1)) {
    m.by_opcode->count += wrs;
    m.by_opcode->bytes += bytes;
    if (m.by_pair) m.by_pair->count += wrs, m.by_pair->bytes += bytes;
    return true;
  }
  return false;
}

[[gnu::always_inline]] inline void count_send(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t wrs = 1) {
  const uint64_t generation = memo_generation();
  if (!count_send_memo(qp, qpn, opcode, bytes, generation, wrs)) count_send_lookup(qp, qpn, opcode, bytes, generation, wrs);
}

}  // namespace sigmatrace::profiler::ibv
