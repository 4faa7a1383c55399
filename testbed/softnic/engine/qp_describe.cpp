// See qp_describe.hpp.
#include "engine/qp_describe.hpp"

#include <cstdio>

#include "core/objects.hpp"

namespace softnic::debug {

size_t describe_qp(const ibv_qp* qp, char* buf, size_t n) {
  const Qp* q = reinterpret_cast<const Qp*>(qp);
  int len = snprintf(buf, n,
                     "transport qp 0x%x state %d: sq head %u send %u tail %u (cap %u), next_psn %u "
                     "next_msn %u acked_msn %u; responder expected_psn %u resp_msn %u, %zu responses "
                     "queued, nak_outstanding %d; send cq %u entries",
                     qp->qp_num, int(qp->state), q->sq.head, q->sq.send, q->sq.tail, q->sq.cap,
                     q->next_psn, q->next_msn, q->acked_msn, q->expected_psn, q->resp_msn,
                     q->resp_q.size(), int(q->nak_outstanding), q->scq ? q->scq->count : 0);
  if (len < 0) return 0;
  size_t used = size_t(len) < n ? size_t(len) : n - 1;
  uint32_t shown = q->landed_n < Qp::kLandedHistory ? q->landed_n : Qp::kLandedHistory;
  for (uint32_t k = shown; k-- > 0 && used + 1 < n;) {
    const Qp::LandedWrite& w = q->landed[(q->landed_n - 1 - k) % Qp::kLandedHistory];
    int m = snprintf(buf + used, n - used, "; wrote psn %u: %u bytes at 0x%llx, first word 0x%llx", w.psn, w.len,
                     (unsigned long long)w.raddr, (unsigned long long)w.first_word);
    if (m < 0) break;
    used = size_t(m) < n - used ? used + size_t(m) : n - 1;
  }
  return used;
}

}  // namespace softnic::debug
