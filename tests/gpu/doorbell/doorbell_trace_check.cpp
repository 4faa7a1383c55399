// Checks a traced GPU-initiated run against what its programs say they did: for every line
//   "... QP 0x<qpn>: <n> WQEBBs posted, one doorbell each"
// in the given logs, the trace of that process must hold exactly n doorbells on QP qpn, with
// producer indices 1..n (mod 2^16), each announcing one WQEBB; the QP must have been created
// with devx (its GPU named when its queue is in GPU memory) and connected to a devx QP of another
// traced process (its peer), its doorbell page hijacked, and a kernel launch must precede its
// first doorbell (the kernel's name is printed when the driver gave one). Used by the GPU tests (tests/gpu/gda); prints one
// line per QP and exits 1 on any mismatch.
//   doorbell_trace_check [--lookups] [--wqes] [--context-reset] EXPERIMENT_DIR LOG...
// --lookups also lists the driver functions the programs looked up by name that the profiler
// instruments, and what they were handed (for finding a path the wrappers do not catch).
// --wqes (a run with SIGMATRACE_DOORBELLS=wqe): for every line
//   "... QP 0x<qpn>: WQEs posted: <w> RDMA_WRITE <b> bytes, <r> RDMA_READ <b> bytes,
//    <a> FETCH_ADD <b> bytes; remote heap 0x<h> rkey 0x<k> digest 0x<d>"
// the QP's recovered WQEs must be exactly those: counts and payload bytes by opcode, every one
// to the peer's heap with its rkey (8-byte WRITEs inline), the same digest of (opcode, bytes,
// heap offset) over all of them, one per doorbell, and none lost, damaged or unread. And each
// must be attributed by the analysis to a gda kernel that posts its opcode (FETCH_ADD: k_fadd;
// READ: k_get, or k_put's verification; WRITE: k_put, k_ping, k_pong, k_barrier), with exactly
// one barrier WRITE per k_barrier launch of the process (two PEs: one peer each).
// --context-reset (a run with GDA_RESET_AT_EXIT=1): every process that rang doorbells recorded
// the reset of its primary context once, successful, after every one of its pollers let go.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "analysis/experiment_model.h"
#include "gda/state.hpp"
#include "mlx5/wqe.hpp"
#include "support/trace_events.h"

using namespace sigmatrace::test;
namespace m5 = sigmatrace::mlx5;

namespace {

struct PostedLine {
  gda::Posted posted{};
  uint64_t heap = 0, rkey = 0;
};

// The recovered WQEs of qpn in owner against what its GPU posted; prints one line.
bool check_wqes(const ProcessEvents& owner, uint64_t qpn, const PostedLine& want) {
  gda::Posted got{};
  uint64_t foreign = 0, not_inline = 0, bad_opcode = 0, doorbells_with_wqes = 0, per_doorbell_mismatch = 0;
  for (const TraceEvent* e : owner.of(sigmatrace::format::EventType::gpu_doorbell))
    if ((*e)[1] == qpn) ++doorbells_with_wqes, per_doorbell_mismatch += (*e)[6] != 1;
  for (const TraceEvent* e : owner.of(sigmatrace::format::EventType::gpu_wqe)) {
    if ((*e)[0] != qpn) continue;
    const uint64_t opcode = (*e)[3], bytes = (*e)[7], raddr = (*e)[8];
    gda::PostedKind kind = gda::kPostedWrite;
    if (opcode == m5::kOpRdmaRead) kind = gda::kPostedRead;
    else if (opcode == m5::kOpAtomicFa) kind = gda::kPostedFetchAdd;
    else if (opcode != m5::kOpRdmaWrite) ++bad_opcode;
    got.wqes[kind]++;
    got.bytes[kind] += bytes;
    got.digest += gda::wqe_digest(uint8_t(opcode), bytes, raddr - want.heap);
    foreign += raddr < want.heap || (*e)[9] != want.rkey;
    not_inline += opcode == m5::kOpRdmaWrite && bytes == 8 && (*e)[13] != 1;
  }
  uint64_t lost = 0, damaged = 0, unread = 0, index_errors = 0, recovered = 0, batches = 0, wait_ns = 0;
  for (const TraceEvent* e : owner.of(sigmatrace::format::EventType::gpu_wqe_stats))
    if ((*e)[0] == qpn)
      recovered += (*e)[4], lost += (*e)[6], damaged += (*e)[7], unread += (*e)[8], index_errors += (*e)[9], batches += (*e)[11],
          wait_ns += (*e)[12];
  bool same = bad_opcode == 0 && foreign == 0 && not_inline == 0 && got.digest == want.posted.digest && per_doorbell_mismatch == 0;
  for (uint32_t k = 0; k < gda::kPostedKinds; ++k) same &= got.wqes[k] == want.posted.wqes[k] && got.bytes[k] == want.posted.bytes[k];
  const bool ok = same && lost + damaged + unread + index_errors == 0;
  printf("QP 0x%" PRIx64 " WQEs: %" PRIu64 "/%" PRIu64 " RDMA_WRITE (%" PRIu64 "/%" PRIu64 " B), %" PRIu64 "/%" PRIu64
         " RDMA_READ (%" PRIu64 "/%" PRIu64 " B), %" PRIu64 "/%" PRIu64 " FETCH_ADD (recovered/posted), digest %s, %" PRIu64
         " outside the peer's heap or with another rkey, %" PRIu64 " doorbells not announcing exactly one WQE; recovered %" PRIu64
         ", lost %" PRIu64 ", damaged %" PRIu64 ", unread %" PRIu64 ", index errors %" PRIu64 "; %" PRIu64
         " batches, %.1f us waited in all: %s\n",
         qpn, got.wqes[0], want.posted.wqes[0], got.bytes[0], want.posted.bytes[0], got.wqes[1], want.posted.wqes[1], got.bytes[1],
         want.posted.bytes[1], got.wqes[2], want.posted.wqes[2], got.digest == want.posted.digest ? "equal" : "DIFFERENT", foreign,
         per_doorbell_mismatch, recovered, lost, damaged, unread, index_errors, batches, double(wait_ns) / 1e3, ok ? "ok" : "MISMATCH");
  return ok;
}

// The kernel the analysis attributes each of qpn's WQEs to, against what gda's kernels post.
bool check_kernels(const ProcessEvents& owner, const sigmatrace::analysis::ProcessRow& row, uint64_t qpn, int64_t gpu) {
  auto short_name = [](const std::string* k) -> std::string {
    for (const char* n : {"k_barrier", "k_put", "k_get", "k_fadd", "k_ping", "k_pong"})
      if (k && k->find(n) != std::string::npos) return n;
    return k ? *k : "unknown";
  };
  std::map<std::pair<std::string, uint64_t>, uint64_t> by;  // (kernel, opcode) -> WQEs
  for (const TraceEvent* e : owner.of(sigmatrace::format::EventType::gpu_wqe))
    if ((*e)[0] == qpn) ++by[{short_name(row.kernel_at(e->tsc, gpu)), (*e)[3]}];
  uint64_t barriers = 0;
  for (const TraceEvent* e : owner.of(sigmatrace::format::EventType::cuda_launch)) {
    auto n = row.kernel_names.find((*e)[0]);
    barriers += n != row.kernel_names.end() && n->second.find("k_barrier") != std::string::npos;
  }
  bool ok = true;
  std::string list;
  for (const auto& [k, n] : by) {
    const auto& [kernel, opcode] = k;
    bool allowed = false;
    if (opcode == m5::kOpAtomicFa) allowed = kernel == "k_fadd";
    else if (opcode == m5::kOpRdmaRead) allowed = kernel == "k_get" || kernel == "k_put";
    else if (opcode == m5::kOpRdmaWrite) allowed = kernel == "k_put" || kernel == "k_ping" || kernel == "k_pong" || kernel == "k_barrier";
    ok &= allowed && (kernel != "k_barrier" || n == barriers);
    const char* op = opcode == m5::kOpRdmaWrite ? " WRITE" : opcode == m5::kOpRdmaRead ? " READ" : " FETCH_ADD";
    list += (list.empty() ? "" : ", ") + kernel + " " + std::to_string(n) + op;
  }
  printf("QP 0x%" PRIx64 " WQEs by kernel: %s (%" PRIu64 " k_barrier launches): %s\n", qpn, list.c_str(), barriers,
         ok ? "ok" : "MISMATCH");
  return ok;
}

}  // namespace
using sigmatrace::format::EventType;
using sigmatrace::format::UarMapOutcome;

int main(int argc, char** argv) {
  bool lookups = false, wqes = false, context_reset = false;
  for (; argc > 1 && argv[1][0] == '-' && argv[1][1] == '-'; --argc, ++argv) {
    if (std::string(argv[1]) == "--lookups") lookups = true;
    else if (std::string(argv[1]) == "--wqes") wqes = true;
    else if (std::string(argv[1]) == "--context-reset") context_reset = true;
    else break;
  }
  if (argc < 3) {
    fprintf(stderr, "usage: doorbell_trace_check [--lookups] [--wqes] [--context-reset] EXPERIMENT_DIR LOG...\n");
    return 2;
  }
  std::map<uint64_t, uint64_t> expected;  // qpn -> WQEBBs posted
  std::map<uint64_t, PostedLine> posted;  // qpn -> WQEs posted
  const std::regex line(R"(QP 0x([0-9a-f]+): ([0-9]+) WQEBBs posted, one doorbell each)");
  const std::regex wqe_line(
      R"(QP 0x([0-9a-f]+): WQEs posted: ([0-9]+) RDMA_WRITE ([0-9]+) bytes, ([0-9]+) RDMA_READ ([0-9]+) bytes, ([0-9]+) FETCH_ADD ([0-9]+) bytes; remote heap 0x([0-9a-f]+) rkey 0x([0-9a-f]+) digest 0x([0-9a-f]+))");
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i]);
    if (!f) {
      fprintf(stderr, "doorbell_trace_check: cannot read %s\n", argv[i]);
      return 2;
    }
    std::string s;
    std::smatch m;
    while (std::getline(f, s))
      if (std::regex_search(s, m, line)) {
        expected[std::stoull(m[1], nullptr, 16)] += std::stoull(m[2]);
      } else if (std::regex_search(s, m, wqe_line)) {
        PostedLine& p = posted[std::stoull(m[1], nullptr, 16)];
        for (uint32_t k = 0; k < gda::kPostedKinds; ++k) {
          p.posted.wqes[k] = std::stoull(m[size_t(2 + 2 * k)]);
          p.posted.bytes[k] = std::stoull(m[size_t(3 + 2 * k)]);
        }
        p.heap = std::stoull(m[8], nullptr, 16);
        p.rkey = std::stoull(m[9], nullptr, 16);
        p.posted.digest = std::stoull(m[10], nullptr, 16);
      }
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
      for (const TraceEvent* e : p.of(EventType::cuda_lookup))
        printf("lookup (%s): %s version %" PRIu64 " flags %" PRIu64 " via %" PRIu64 ": %s\n", file.c_str(), e->bytes.c_str(), (*e)[1],
               (*e)[2], (*e)[0], (*e)[3] ? "wrapper" : "driver's own");
      for (const TraceEvent* e : p.of(EventType::cuda_export_table))
        printf("export table (%s): %016" PRIx64 "%016" PRIx64 "\n", file.c_str(), (*e)[0], (*e)[1]);
      printf("launches recorded (%s): %zu\n", file.c_str(), p.count(EventType::cuda_launch));
    }
  if (expected.empty()) {
    fprintf(stderr, "doorbell_trace_check: the logs name no QP\n");
    return 1;
  }
  int bad = 0;
  std::unique_ptr<sigmatrace::analysis::ExperimentModel> model;  // built once, for --wqes
  for (const auto& [qpn, n] : expected) {
    const ProcessEvents* owner = nullptr;
    const TraceEvent* created = nullptr;
    for (const ProcessEvents& p : procs)
      for (const TraceEvent* e : p.of(EventType::devx_qp_create))
        if ((*e)[2] == qpn) owner = &p, created = e;
    if (!owner) {
      printf("QP 0x%" PRIx64 ": not created with devx in any traced process\n", qpn);
      ++bad;
      continue;
    }
    std::vector<const TraceEvent*> dbs;
    for (const TraceEvent* e : owner->of(EventType::gpu_doorbell))
      if ((*e)[1] == qpn) dbs.push_back(e);
    std::stable_sort(dbs.begin(), dbs.end(), [](const TraceEvent* a, const TraceEvent* b) { return a->tsc < b->tsc; });
    uint64_t consecutive = 0, wqebbs = 0;
    for (size_t k = 0; k < dbs.size(); ++k) {
      consecutive += (*dbs[k])[2] == ((k + 1) & 0xffff) && (*dbs[k])[3] == 1;
      wqebbs += (*dbs[k])[3];
    }
    uint64_t hijacked = 0;
    for (const TraceEvent* e : owner->of(EventType::gpu_uar_map))
      hijacked += (*e)[2] == (*created)[12] && (*e)[6] == uint64_t(UarMapOutcome::hijacked);
    uint64_t launched_before = 0, kernel_fn = 0;
    for (const TraceEvent* e : owner->of(EventType::cuda_launch))
      if (!dbs.empty() && e->tsc < dbs[0]->tsc) ++launched_before, kernel_fn = (*e)[0];
    std::string kernel = "?";
    for (const TraceEvent* e : owner->of(EventType::cuda_function))
      if ((*e)[0] == kernel_fn && !e->bytes.empty()) kernel = e->bytes;
    // The peer: INIT2RTR's remote QPN names a devx QP of another traced process.
    std::string peer;
    for (const TraceEvent* e : owner->of(EventType::devx_qp_modify))
      if ((*e)[1] == qpn && (*e)[2] == 0x503)
        for (const ProcessEvents& p : procs)
          if (&p != owner)
            for (const TraceEvent* c : p.of(EventType::devx_qp_create))
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
    if (wqes) {
      auto it = posted.find(qpn);
      if (it == posted.end()) {
        printf("QP 0x%" PRIx64 ": the log does not say which WQEs were posted\n", qpn);
        ++bad;
      } else {
        bad += !check_wqes(*owner, qpn, it->second);
        if (!model)
          model = std::make_unique<sigmatrace::analysis::ExperimentModel>(sigmatrace::analysis::build_experiment_model(argv[1], 1, nullptr));
        const sigmatrace::analysis::ProcessRow* row = nullptr;
        for (const auto& pr : model->processes)
          if (pr.file->path == owner->path) row = &pr;
        if (!row) {
          printf("QP 0x%" PRIx64 ": the analysis does not know its process\n", qpn);
          ++bad;
        } else {
          bad += !check_kernels(*owner, *row, qpn, (*created)[15] == 1 ? int64_t((*created)[16]) : -1);
        }
      }
    }
  }
  if (context_reset)
    for (const ProcessEvents& p : procs) {
      if (p.of(EventType::gpu_doorbell).empty()) continue;
      uint64_t pollers = 0;
      for (const TraceEvent* e : p.of(EventType::gpu_poller)) pollers += (*e)[0] == 1;
      const auto ends = p.of(EventType::cuda_context_end);
      const bool ok = ends.size() == 1 && (*ends[0])[1] == uint64_t(sigmatrace::format::CudaContextEnd::reset) &&
                      (*ends[0])[5] == 0 && (*ends[0])[2] == pollers && pollers >= 1;
      printf("context reset (%s): %zu recorded, %" PRIu64 " of %" PRIu64 " pollers let go, %" PRIu64 " markers dropped, %" PRIu64
             " queues in it: %s\n",
             p.path.substr(p.path.rfind('/') + 1).c_str(), ends.size(), ends.empty() ? 0 : (*ends[0])[2], pollers,
             ends.empty() ? 0 : (*ends[0])[3], ends.empty() ? 0 : (*ends[0])[4], ok ? "ok" : "MISMATCH");
      bad += !ok;
    }
  // What the pollers cost: CPU time over their lifetime, per doorbell page (one page each here).
  for (const ProcessEvents& p : procs)
    for (const TraceEvent* e : p.of(EventType::gpu_poller))
      if ((*e)[0] == 2 && (*e)[4] > 0)
        printf("poller (%s): %" PRIu64 " doorbells, CPU %.1f ms of %.1f ms (%.0f %%), %.2f us CPU per doorbell\n",
               p.path.substr(p.path.rfind('/') + 1).c_str(), (*e)[2], double((*e)[3]) / 1e6, double((*e)[4]) / 1e6,
               100.0 * double((*e)[3]) / double((*e)[4]), (*e)[2] ? double((*e)[3]) / 1e3 / double((*e)[2]) : 0.0);
  printf("%s\n", bad ? "doorbell check FAILED"
                     : wqes ? "doorbell check passed: every doorbell the GPUs rang was recorded, with exactly the WQEs they posted"
                            : "doorbell check passed: every doorbell the GPUs rang was recorded");
  return bad ? 1 : 0;
}
