// Checks a traced GPU-initiated run against what its programs say they did: for every line
//   "... QP 0x<qpn>: <n> WQEBBs posted, one doorbell each"
// in the given logs, the trace of that process must hold exactly n doorbells on QP qpn, with
// producer indices 1..n (mod 2^16), each announcing one WQEBB; the QP must have been created
// with devx (its GPU named when its queue is in GPU memory) and connected to a devx QP of another
// traced process (its peer), its doorbell page hijacked, and a kernel launch must precede its
// first doorbell (the kernel's name is printed when the driver gave one). Used by the GPU tests (testbed/gda); prints one
// line per QP and exits 1 on any mismatch.
//   doorbell_trace_check [--lookups] EXPERIMENT_DIR LOG...
// --lookups also lists the driver functions the programs looked up by name that the profiler
// instruments, and what they were handed (for finding a path the wrappers do not catch).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "verbs_trace.h"

using namespace sigmatrace::test;
using sigmatrace::format::EventType;
using sigmatrace::format::UarMapOutcome;

int main(int argc, char** argv) {
  bool lookups = argc > 1 && std::string(argv[1]) == "--lookups";
  if (lookups) --argc, ++argv;
  if (argc < 3) {
    fprintf(stderr, "usage: doorbell_trace_check [--lookups] EXPERIMENT_DIR LOG...\n");
    return 2;
  }
  std::map<uint64_t, uint64_t> expected;  // qpn -> WQEBBs posted
  const std::regex line(R"(QP 0x([0-9a-f]+): ([0-9]+) WQEBBs posted, one doorbell each)");
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i]);
    if (!f) {
      fprintf(stderr, "doorbell_trace_check: cannot read %s\n", argv[i]);
      return 2;
    }
    std::string s;
    std::smatch m;
    while (std::getline(f, s))
      if (std::regex_search(s, m, line)) expected[std::stoull(m[1], nullptr, 16)] += std::stoull(m[2]);
  }
  std::vector<ProcessEvents> procs;
  std::string err;
  if (!read_experiment(argv[1], &procs, &err)) {
    fprintf(stderr, "doorbell_trace_check: %s\n", err.c_str());
    return 1;
  }
  if (lookups)
    for (const ProcessEvents& p : procs) {
      const std::string file = p.path.substr(p.path.rfind('/') + 1);
      for (const VerbsEvent* e : p.of(EventType::cuda_lookup))
        printf("lookup (%s): %s version %" PRIu64 " flags %" PRIu64 " via %" PRIu64 ": %s\n", file.c_str(), e->bytes.c_str(), (*e)[1],
               (*e)[2], (*e)[0], (*e)[3] ? "wrapper" : "driver's own");
      for (const VerbsEvent* e : p.of(EventType::cuda_export_table))
        printf("export table (%s): %016" PRIx64 "%016" PRIx64 "\n", file.c_str(), (*e)[0], (*e)[1]);
      printf("launches recorded (%s): %zu\n", file.c_str(), p.count(EventType::cuda_launch));
    }
  if (expected.empty()) {
    fprintf(stderr, "doorbell_trace_check: the logs name no QP\n");
    return 1;
  }
  int bad = 0;
  for (const auto& [qpn, n] : expected) {
    const ProcessEvents* owner = nullptr;
    const VerbsEvent* created = nullptr;
    for (const ProcessEvents& p : procs)
      for (const VerbsEvent* e : p.of(EventType::devx_qp_create))
        if ((*e)[2] == qpn) owner = &p, created = e;
    if (!owner) {
      printf("QP 0x%" PRIx64 ": not created with devx in any traced process\n", qpn);
      ++bad;
      continue;
    }
    std::vector<const VerbsEvent*> dbs;
    for (const VerbsEvent* e : owner->of(EventType::gpu_doorbell))
      if ((*e)[1] == qpn) dbs.push_back(e);
    std::stable_sort(dbs.begin(), dbs.end(), [](const VerbsEvent* a, const VerbsEvent* b) { return a->tsc < b->tsc; });
    uint64_t consecutive = 0, wqebbs = 0;
    for (size_t k = 0; k < dbs.size(); ++k) {
      consecutive += (*dbs[k])[2] == ((k + 1) & 0xffff) && (*dbs[k])[3] == 1;
      wqebbs += (*dbs[k])[3];
    }
    uint64_t hijacked = 0;
    for (const VerbsEvent* e : owner->of(EventType::gpu_uar_map))
      hijacked += (*e)[2] == (*created)[12] && (*e)[6] == uint64_t(UarMapOutcome::hijacked);
    uint64_t launched_before = 0, kernel_fn = 0;
    for (const VerbsEvent* e : owner->of(EventType::cuda_launch))
      if (!dbs.empty() && e->tsc < dbs[0]->tsc) ++launched_before, kernel_fn = (*e)[0];
    std::string kernel = "?";
    for (const VerbsEvent* e : owner->of(EventType::cuda_function))
      if ((*e)[0] == kernel_fn && !e->bytes.empty()) kernel = e->bytes;
    // The peer: INIT2RTR's remote QPN names a devx QP of another traced process.
    std::string peer;
    for (const VerbsEvent* e : owner->of(EventType::devx_qp_modify))
      if ((*e)[1] == qpn && (*e)[2] == 0x503)
        for (const ProcessEvents& p : procs)
          if (&p != owner)
            for (const VerbsEvent* c : p.of(EventType::devx_qp_create))
              if ((*c)[2] == (*e)[3]) peer = p.path.substr(p.path.rfind('/') + 1) + " QP 0x" + [&] {
                char b[16];
                snprintf(b, sizeof b, "%" PRIx64, (*e)[3]);
                return std::string(b);
              }();
    const int64_t gpu = int64_t((*created)[16]);
    const bool ok = dbs.size() == n && consecutive == n && wqebbs == n && hijacked >= 1 && launched_before >= 1 && !peer.empty();
    printf("QP 0x%" PRIx64 " (%s, %s memory%s, peer %s): %" PRIu64 " WQEBBs posted, %zu doorbells recorded, %" PRIu64
           " consecutive, %" PRIu64 " WQEBBs announced, page hijacked %" PRIu64 "x, %" PRIu64 " launches before (kernel %s): %s\n",
           qpn, owner->path.substr(owner->path.rfind('/') + 1).c_str(), (*created)[15] == 1 ? "GPU" : "host",
           gpu >= 0 ? (", GPU " + std::to_string(gpu)).c_str() : "", peer.empty() ? "NOT FOUND" : peer.c_str(), n, dbs.size(),
           consecutive, wqebbs, hijacked, launched_before, kernel.c_str(), ok ? "ok" : "MISMATCH");
    bad += !ok;
  }
  // What the pollers cost: CPU time over their lifetime, per doorbell page (one page each here).
  for (const ProcessEvents& p : procs)
    for (const VerbsEvent* e : p.of(EventType::gpu_poller))
      if ((*e)[0] == 2 && (*e)[4] > 0)
        printf("poller (%s): %" PRIu64 " doorbells, CPU %.1f ms of %.1f ms (%.0f %%), %.2f us CPU per doorbell\n",
               p.path.substr(p.path.rfind('/') + 1).c_str(), (*e)[2], double((*e)[3]) / 1e6, double((*e)[4]) / 1e6,
               100.0 * double((*e)[3]) / double((*e)[4]), (*e)[2] ? double((*e)[3]) / 1e3 / double((*e)[2]) : 0.0);
  printf("%s\n", bad ? "doorbell check FAILED" : "doorbell check passed: every doorbell the GPUs rang was recorded");
  return bad ? 1 : 0;
}
