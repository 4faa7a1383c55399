#include "profiler/runtime/cpu_list.h"

#include <sched.h>

#include <cstdlib>

namespace sigmatrace::profiler {

bool parse_cpu_list(const std::string& text, std::vector<int>* out) {
  out->clear();
  const char* s = text.c_str();
  while (*s && *s != '\n') {
    char* end = nullptr;
    if (*s < '0' || *s > '9') return false;
    const long first = strtol(s, &end, 10);
    long last = first;
    s = end;
    if (*s == '-') {
      if (s[1] < '0' || s[1] > '9') return false;
      last = strtol(s + 1, &end, 10);
      s = end;
    }
    if (last < first || last >= CPU_SETSIZE) return false;
    for (long c = first; c <= last; ++c) out->push_back(int(c));
    if (*s == ',') {
      ++s;
      if (!*s || *s == '\n') return false;  // "1," names no CPU after its comma
    } else if (*s && *s != '\n') {
      return false;
    }
  }
  return !out->empty() && (!*s || s[1] == '\0');
}

}  // namespace sigmatrace::profiler
