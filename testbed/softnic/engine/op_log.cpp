// The verbs QPs' execution log (op_log.hpp). Control path only: at QP destruction and exit.
#include "engine/op_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softnic {

namespace {
// By OpKind (core/operation.hpp), as sigmatrace names the ibv_wr_opcode each stands for.
constexpr const char* kOpNames[kOpKinds] = {"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC_CS", "ATOMIC_FA"};
}  // namespace

void write_op_log(Qp* qp) {
  static const char* dir = getenv("SOFTNIC_WQE_LOG");
  if (!dir || !*dir || qp->op_log_written || qp->carries_devx_qp) return;
  qp->op_log_written = true;
  char host[128] = "";
  const char* h = getenv("SOFTNIC_HOST");
  if (h && *h) snprintf(host, sizeof host, "%s", h);
  else gethostname(host, sizeof host - 1);
  char path[1024];
  snprintf(path, sizeof path, "%s/softnic-verbs-%s-%d.txt", dir, host, int(getpid()));
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
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, size_t(n)) != n) fprintf(stderr, "softnic: cannot write %s: %s\n", path, strerror(errno));
  if (fd >= 0) close(fd);
}

}  // namespace softnic
