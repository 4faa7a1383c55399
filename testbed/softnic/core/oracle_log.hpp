// Where softnic's oracles of what it executed go (SOFTNIC_WQE_LOG=DIR): one file per process and
// kind, DIR/softnic-<kind>-<host>-<pid>.txt, one line per QP appended. The devx engine writes kind
// "wqes" (core/wqe_oracle.hpp), the verbs engine kind "verbs" (engine/op_log.hpp).
// Control path only (QP destruction, exit).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softnic::oracle {

// The directory, or null when no oracle is asked for.
inline const char* log_dir() {
  static const char* dir = getenv("SOFTNIC_WQE_LOG");
  return dir && *dir ? dir : nullptr;
}

// Appends line (n bytes) to this process's file of that kind; one line on stderr when it cannot.
inline void append_line(const char* kind, const char* line, size_t n) {
  const char* dir = log_dir();
  if (!dir) return;
  char host[128] = "";
  const char* h = getenv("SOFTNIC_HOST");
  if (h && *h) snprintf(host, sizeof host, "%s", h);
  else gethostname(host, sizeof host - 1);
  char path[1024];
  snprintf(path, sizeof path, "%s/softnic-%s-%s-%d.txt", dir, kind, host, int(getpid()));
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, n) != ssize_t(n)) fprintf(stderr, "softnic: cannot write %s: %s\n", path, strerror(errno));
  if (fd >= 0) close(fd);
}

}  // namespace softnic::oracle
