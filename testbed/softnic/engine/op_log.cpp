// The verbs QPs' execution log (op_log.hpp). Control path only: at QP destruction and exit.
#include "engine/op_log.hpp"

#include <cstdio>

#include "core/oracle_log.hpp"

namespace softnic {

namespace {
// By OpKind (core/operation.hpp), as sigmatrace names the ibv_wr_opcode each stands for.
constexpr const char* kOpNames[kOpKinds] = {"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC_CS", "ATOMIC_FA"};
}  // namespace

void write_op_log(Qp* qp) {
  if (!oracle::log_dir() || qp->op_log_written || qp->carries_devx_qp) return;
  qp->op_log_written = true;
  uint64_t wrs = 0;
  for (const Qp::OpTally& t : qp->executed) wrs += t.wrs;
  const char* type = qp->kind == QpKind::rc ? "rc" : qp->kind == QpKind::dci ? "dci" : "dct";
  char line[1024];
  int n = snprintf(line, sizeof line, "qp=0x%x type=%s wrs=%llu ops=", qp->qp()->qp_num, type, (unsigned long long)wrs);
  const char* sep = "";
  for (uint32_t k = 0; k < kOpKinds; ++k) {
    if (!qp->executed[k].wrs) continue;
    n += snprintf(line + n, sizeof line - size_t(n), "%s%s:%llu:%llu", sep, kOpNames[k], (unsigned long long)qp->executed[k].wrs,
                  (unsigned long long)qp->executed[k].bytes);
    sep = ",";
  }
  n += snprintf(line + n, sizeof line - size_t(n), "\n");
  oracle::append_line("verbs", line, size_t(n));
}

}  // namespace softnic
