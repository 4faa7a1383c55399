// See ibverbs_send_counters.h. These run when a thread's memo does not apply: a new QP or opcode,
// or endpoints that changed since it was made.
#include "profiler/providers/verbs/ibverbs_send_counters.h"

namespace sigmatrace::profiler::ibv {

using format::AggregateKey;

[[gnu::noinline]] void count_send_slow(SendCounterMemo& m, const void* qp, uint32_t qpn, uint32_t opcode, uint64_t local, uint64_t remote,
                                       uint64_t bytes, uint64_t generation, uint64_t wrs) {
  m.qp = nullptr;
  AggregateTable* tab = t_state.aggregate;
  if (!tab) tab = attach_aggregate_slow();
  if (!tab) return;
  AggregateEntry* by_opcode = tab->entry(static_cast<uint64_t>(AggregateKey::ibv_qp_opcode), qpn, opcode);
  AggregateEntry* by_pair = remote ? tab->entry(static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair), local, remote) : nullptr;
  if (!by_opcode || (remote && !by_pair)) {  // no room: counted as overflow by the table
    for (uint64_t i = 0; i < wrs; ++i) {
      tab->add(static_cast<uint64_t>(AggregateKey::ibv_qp_opcode), qpn, opcode, i == 0 ? bytes : 0);
      if (remote) tab->add(static_cast<uint64_t>(AggregateKey::ibv_endpoint_pair), local, remote, i == 0 ? bytes : 0);
    }
    return;
  }
  by_opcode->count += wrs;
  by_opcode->bytes += bytes;
  if (by_pair) by_pair->count += wrs, by_pair->bytes += bytes;
  m = {qp, (uint64_t{qpn} << 32) | opcode, generation, by_opcode, by_pair};
}

// The QP's endpoints are looked up only when the memo does not apply.
[[gnu::noinline]] void count_send_lookup(const void* qp, uint32_t qpn, uint32_t opcode, uint64_t bytes, uint64_t generation, uint64_t wrs) {
  QpState* s = find_qp(qp);
  count_send_slow(t_send_memo, qp, qpn, opcode, s ? s->local_endpoint : 0, s ? s->remote_endpoint : 0, bytes, generation, wrs);
}

}  // namespace sigmatrace::profiler::ibv
