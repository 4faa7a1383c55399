// What softnic's devx engine executed on each QP, as an oracle independent of any profiler:
// SOFTNIC_WQE_LOG=DIR makes each process write, when a devx QP is destroyed or the process
// exits, one line per QP to DIR/softnic-wqes-<host>-<pid>.txt:
//   qp=0x<qpn> type=rc|dci wqes=<n> rejected=<r> digest=0x<d> ops=<opcode>:<count>:<bytes>,...
// digest folds every executed WQE, in send-queue order, with wqe_digest(); a tracer that
// recovered the same WQEs computes the same value from the fields it recorded.
#pragma once
#include <cstdint>

namespace softnic::oracle {

// FNV-1a over the fields that say what a WQE did and where.
inline uint64_t wqe_digest(uint64_t digest, uint64_t index, uint64_t opcode, uint64_t opmod, uint64_t bytes,
                           uint64_t remote_addr, uint64_t rkey, uint64_t dct, uint64_t swap_add, uint64_t compare) {
  if (!digest) digest = 1469598103934665603ull;
  const uint64_t fields[] = {index, opcode, opmod, bytes, remote_addr, rkey, dct, swap_add, compare};
  for (uint64_t f : fields)
    for (int i = 0; i < 8; ++i) digest = (digest ^ ((f >> (8 * i)) & 0xff)) * 1099511628211ull;
  return digest;
}

}  // namespace softnic::oracle
