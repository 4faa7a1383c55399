// pftrace_check TRACE.pftrace [TRACE.sqlite]: checks a timeline `sigmatrace analyze` wrote against
// the invariants of support/timeline_check.h; prints what it found, each problem on its own line;
// exit 0 when every invariant holds, 1 otherwise, 2 on a usage error.
#include <cstdio>
#include <string>

#include "support/timeline_check.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: pftrace_check TRACE.pftrace [TRACE.sqlite]\n");
    return 2;
  }
  const sigmatrace::test::TimelineReport r = sigmatrace::test::check_timeline(argv[1], argc == 3 ? argv[2] : "");
  std::printf("%s: %s\n", argv[1], r.summary().c_str());
  for (const std::string& p : r.problems) std::printf("problem: %s\n", p.c_str());
  return r.problems.empty() ? 0 : 1;
}
