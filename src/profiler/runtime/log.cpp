// See log.h. Lines are formatted into a stack buffer so a message is one atomic write.
#include "profiler/runtime/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace sigmatrace::profiler {

void log_line(const char* fmt, ...) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "sigmatrace: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  n += m;
  if (n > static_cast<int>(sizeof buf) - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, static_cast<size_t>(n));
  (void)ignored;
}

}  // namespace sigmatrace::profiler
