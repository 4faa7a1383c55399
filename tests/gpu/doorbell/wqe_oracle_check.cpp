// Checks a traced GPU-initiated run (SIGMATRACE_DOORBELLS=wqe) against what softnic's devx
// engine executed (SOFTNIC_WQE_LOG, testbed/softnic/core/wqe_oracle.hpp), an oracle that knows
// nothing of the profiler: per process (matched by pid) and per QP, the recovered WQEs must be
// exactly the executed ones — the same number per opcode, the same bytes, the same digest of
// (index, opcode, opmod, bytes, remote address, rkey, DC target, atomic operands) in send-queue
// order — with none lost, damaged or unread; every QP that executed WQEs must have rung its
// doorbells through a hijacked page, and its doorbells' WQE counts must add up to its WQEs.
//   wqe_oracle_check EXPERIMENT_DIR ORACLE_DIR
// Prints one line per QP and a verdict; exit 0 when every QP matches, 1 otherwise, 2 on bad input.
#include <dirent.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "softnic/core/wqe_oracle.hpp"
#include "support/trace_events.h"

using namespace sigmatrace::test;
using sigmatrace::format::EventType;

namespace {

struct QpTally {
  std::string type;
  uint64_t wqes = 0, rejected = 0, digest = 0;
  std::map<unsigned, std::pair<uint64_t, uint64_t>> ops;  // opcode -> (WQEs, bytes)
};
using ProcessTally = std::map<uint64_t, QpTally>;  // by QP number

// DIR/softnic-wqes-<host>-<pid>.txt, every line of every process.
bool read_oracle(const std::string& dir, std::map<long, ProcessTally>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return fprintf(stderr, "wqe_oracle_check: cannot open %s\n", dir.c_str()), false;
  const std::regex name(R"(softnic-wqes-.*-([0-9]+)\.txt)");
  const std::regex line(R"(qp=0x([0-9a-f]+) type=(\w+) wqes=([0-9]+) rejected=([0-9]+) digest=0x([0-9a-f]+) ops=(.*))");
  while (dirent* e = readdir(d)) {
    std::smatch m;
    std::string n = e->d_name;
    if (!std::regex_match(n, m, name)) continue;
    ProcessTally& p = (*out)[std::stol(m[1])];
    std::ifstream in(dir + "/" + n);
    for (std::string l; std::getline(in, l);) {
      std::smatch f;
      if (!std::regex_match(l, f, line)) {
        fprintf(stderr, "wqe_oracle_check: %s: unparsed line: %s\n", n.c_str(), l.c_str());
        closedir(d);
        return false;
      }
      QpTally& q = p[std::stoull(f[1], nullptr, 16)];
      q.type = f[2];
      q.wqes = std::stoull(f[3]);
      q.rejected = std::stoull(f[4]);
      q.digest = std::stoull(f[5], nullptr, 16);
      std::stringstream ops(f[6]);
      for (std::string op; std::getline(ops, op, ',');) {
        unsigned code = 0;
        unsigned long long count = 0, bytes = 0;
        if (sscanf(op.c_str(), "%x:%llu:%llu", &code, &count, &bytes) == 3) q.ops[code] = {count, bytes};
      }
    }
  }
  closedir(d);
  return true;
}

long pid_of(const std::string& path) {
  std::smatch m;
  static const std::regex re(R"(\.p([0-9]+)\.sgt$)");
  return std::regex_search(path, m, re) ? std::stol(m[1]) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: wqe_oracle_check EXPERIMENT_DIR ORACLE_DIR\n");
    return 2;
  }
  std::map<long, ProcessTally> oracle;
  if (!read_oracle(argv[2], &oracle)) return 2;
  std::vector<ProcessEvents> procs;
  std::string error;
  if (!read_experiment(argv[1], &procs, &error)) {
    fprintf(stderr, "wqe_oracle_check: %s\n", error.c_str());
    return 2;
  }
  bool ok = !oracle.empty();
  if (oracle.empty()) printf("no softnic WQE log in %s: nothing executed?\n", argv[2]);
  uint64_t total = 0, qps = 0;
  for (const ProcessEvents& p : procs) {
    const long pid = pid_of(p.path);
    auto o = oracle.find(pid);
    if (o == oracle.end()) continue;  // a process that executed no devx WQE (mpirun, a shell)
    ProcessTally traced;
    std::map<uint64_t, uint64_t> doorbell_wqes, lost, damaged, unread;
    for (const TraceEvent* e : p.of(EventType::gpu_wqe)) {
      QpTally& q = traced[(*e)[0]];
      const unsigned opcode = unsigned((*e)[3]);
      q.wqes++;
      q.ops[opcode].first++;
      q.ops[opcode].second += (*e)[7];
      q.digest = softnic::oracle::wqe_digest(q.digest, (*e)[1], opcode, (*e)[4], (*e)[7], (*e)[8], (*e)[9], (*e)[19], (*e)[15], (*e)[16]);
    }
    for (const TraceEvent* e : p.of(EventType::gpu_doorbell)) doorbell_wqes[(*e)[1]] += (*e)[6];
    for (const TraceEvent* e : p.of(EventType::gpu_wqe_stats))
      lost[(*e)[0]] += (*e)[6], damaged[(*e)[0]] += (*e)[7], unread[(*e)[0]] += (*e)[8] + (*e)[9];
    uint64_t hijacked = 0;
    for (const TraceEvent* e : p.of(EventType::gpu_uar_map)) hijacked += (*e)[6] == uint64_t(sigmatrace::format::UarMapOutcome::hijacked);
    printf("process %ld (%s): %" PRIu64 " doorbell pages hijacked\n", pid, p.path.c_str(), hijacked);
    for (const auto& [qpn, want] : o->second) {
      if (!want.wqes && !want.rejected) continue;
      const QpTally& got = traced[qpn];
      const bool same = got.wqes == want.wqes && got.ops == want.ops && got.digest == want.digest;
      const bool clean = lost[qpn] + damaged[qpn] + unread[qpn] == 0 && want.rejected == 0 && doorbell_wqes[qpn] == got.wqes;
      std::string ops;
      for (const auto& [code, cb] : want.ops) {
        auto g = got.ops.find(code);
        char b[96];
        snprintf(b, sizeof b, "%s0x%02x %" PRIu64 "/%" PRIu64 " (%" PRIu64 "/%" PRIu64 " B)", ops.empty() ? "" : ", ", code,
                 g == got.ops.end() ? 0 : g->second.first, cb.first, g == got.ops.end() ? 0 : g->second.second, cb.second);
        ops += b;
      }
      printf("  QP 0x%" PRIx64 " %s: %" PRIu64 "/%" PRIu64 " WQEs recovered/executed [%s], digest %s; lost %" PRIu64 ", damaged %" PRIu64
             ", unread %" PRIu64 ", rejected by softnic %" PRIu64 ", doorbells announced %" PRIu64 ": %s\n",
             qpn, want.type.c_str(), got.wqes, want.wqes, ops.c_str(), got.digest == want.digest ? "equal" : "DIFFERENT", lost[qpn], damaged[qpn],
             unread[qpn], want.rejected, doorbell_wqes[qpn], same && clean ? "ok" : "MISMATCH");
      ok &= same && clean;
      total += want.wqes;
      ++qps;
    }
    for (const auto& [qpn, got] : traced)
      if (!o->second.count(qpn)) {
        printf("  QP 0x%" PRIx64 ": %" PRIu64 " WQEs recovered that softnic never executed: MISMATCH\n", qpn, got.wqes);
        ok = false;
      }
    oracle.erase(o);
  }
  for (const auto& [pid, tally] : oracle) {
    uint64_t wqes = 0;
    for (const auto& [qpn, q] : tally) wqes += q.wqes;
    if (!wqes) continue;
    printf("process %ld executed %" PRIu64 " WQEs and has no trace: MISMATCH\n", pid, wqes);
    ok = false;
  }
  printf("%" PRIu64 " WQEs on %" PRIu64 " QPs: %s\n", total, qps, ok ? "every WQE softnic executed was recovered exactly" : "MISMATCH");
  return ok ? 0 : 1;
}
