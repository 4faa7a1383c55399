// What softnic executed on each verbs QP, as an oracle independent of any profiler (the verbs
// counterpart of the devx engine's WQE log, core/wqe_oracle.hpp): SOFTNIC_WQE_LOG=DIR makes each
// process write, when a verbs QP is destroyed or the process exits, one line per QP to
// DIR/softnic-verbs-<host>-<pid>.txt:
//   qp=0x<qpn> type=rc wrs=<n> ops=<NAME>:<wrs>:<bytes>,...
// counting the send-queue work requests the requester completed successfully, by opcode (the
// names sigmatrace gives them: WRITE, WRITE_IMM, SEND, SEND_IMM, READ, ATOMIC_CS, ATOMIC_FA) and
// their message bytes. QPs that carry a devx QP's traffic are left to the devx engine's log.
#pragma once
#include "core/objects.hpp"

namespace softnic {

// Once per QP; nothing without SOFTNIC_WQE_LOG. Call with the engine lock held or the engine stopped.
void write_op_log(Qp* qp);

}  // namespace softnic
