// Fig. 4-style microbenchmarks of GPU-initiated RDMA between PEs (processes) on one GPU:
//   put   Put+Quiet   (8-byte inline RDMA WRITE, then wait for its CQE)
//   get   Get         (blocking 8-byte RDMA READ)
//   fadd  Atomic FetchAdd (blocking, 8-byte)
//   pingpong  round trip: PE 0 puts, PE 1 spins on the flag and puts back
// One GPU thread per PE issues and times every iteration with %globaltimer. Every result is
// verified (gets return what was written, fetch-add returns exactly 0,1,2,..., ping-pong
// values match). Usage: gda_bench --pe N --npes 2 --dir DIR [--test all|put|get|fadd|pingpong]
//   [--warmup 1000] [--iters 5000] [--json FILE] [--device-timeout 10] [--verbose]
#include <cuda_runtime.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gda/device.cuh"
#include "gda/gda.hpp"

using namespace gda;

constexpr uint64_t kSlots = 1024;                     // distinct 8-byte targets
constexpr uint64_t kPutOff = kHeapReserved;           // put targets
constexpr uint64_t kGetOff = kPutOff + 8 * kSlots;    // get sources (pattern written by the owner)
constexpr uint64_t kGetDst = kGetOff + 8 * kSlots;    // local get destination
constexpr uint64_t kCounterOff = kGetDst + 64;        // fetch-add counter
constexpr uint64_t kPingOff = kCounterOff + 64;       // ping-pong flag

__host__ __device__ inline uint64_t put_pattern(uint64_t i) { return 0x5100000000000000ull ^ (i * 0x9e3779b97f4a7c15ull); }
__host__ __device__ inline uint64_t get_pattern(uint64_t j) { return 0x6700000000000000ull | (j * 2654435761ull); }

struct Result {
  unsigned long long errors;
  unsigned long long first_bad;
  unsigned long long measured;  // timed iterations completed (entries of t[] that hold a time)
  unsigned int qp_error;
};

__device__ void finish(DeviceState* s, int peer, Result* r) {
  r->qp_error = s->qp[peer].error;
}

__global__ void k_barrier(DeviceState* s, Result* r) {
  if (!dev::barrier(s)) r->errors++;
}

__global__ void k_put(DeviceState* s, int peer, int warm, int iters, uint64_t* t, Result* r) {
  for (int i = 0; i < warm + iters; ++i) {
    uint64_t t0 = dev::globaltimer();
    bool ok = dev::put8(s, peer, kPutOff + 8 * (uint64_t(i) % kSlots), put_pattern(i)) && dev::quiet(s, peer);
    uint64_t t1 = dev::globaltimer();
    if (!ok) { r->errors++; break; }
    if (i >= warm) t[r->measured++] = t1 - t0;
  }
  // Verify: read every slot back; each holds the last value put into it.
  int n = warm + iters;
  for (uint64_t j = 0; j < kSlots && j < uint64_t(n); ++j) {
    uint64_t last = j + ((uint64_t(n) - 1 - j) / kSlots) * kSlots;
    if (!dev::get(s, peer, kGetDst, kPutOff + 8 * j, 8)) { r->errors++; break; }
    uint64_t v = *reinterpret_cast<volatile uint64_t*>(s->heap + kGetDst);
    if (v != put_pattern(last)) { if (!r->errors) r->first_bad = j; r->errors++; }
  }
  finish(s, peer, r);
}

__global__ void k_get(DeviceState* s, int peer, int warm, int iters, uint64_t* t, Result* r) {
  for (int i = 0; i < warm + iters; ++i) {
    uint64_t j = uint64_t(i) % kSlots;
    uint64_t t0 = dev::globaltimer();
    bool ok = dev::get(s, peer, kGetDst, kGetOff + 8 * j, 8);
    uint64_t t1 = dev::globaltimer();
    if (!ok) { r->errors++; break; }
    uint64_t v = *reinterpret_cast<volatile uint64_t*>(s->heap + kGetDst);
    if (v != get_pattern(j)) { if (!r->errors) r->first_bad = i; r->errors++; }
    if (i >= warm) t[r->measured++] = t1 - t0;
  }
  finish(s, peer, r);
}

__global__ void k_fadd(DeviceState* s, int peer, int warm, int iters, uint64_t* t, Result* r) {
  for (int i = 0; i < warm + iters; ++i) {
    uint64_t old = ~0ull;
    uint64_t t0 = dev::globaltimer();
    bool ok = dev::fetch_add(s, peer, kCounterOff, 1, &old);
    uint64_t t1 = dev::globaltimer();
    if (!ok) { r->errors++; break; }
    if (old != uint64_t(i)) { if (!r->errors) r->first_bad = i; r->errors++; }
    if (i >= warm) t[r->measured++] = t1 - t0;
  }
  uint64_t final_v = 0;
  if (!dev::fetch_add(s, peer, kCounterOff, 0, &final_v) || final_v != uint64_t(warm + iters)) r->errors++;
  finish(s, peer, r);
}

__global__ void k_ping(DeviceState* s, int peer, int warm, int iters, uint64_t* t, Result* r) {
  for (int i = 0; i < warm + iters; ++i) {
    uint64_t v = uint64_t(i) + 1;
    uint64_t t0 = dev::globaltimer();
    bool ok = dev::put8(s, peer, kPingOff, v) && dev::wait_eq(s, kPingOff, v);
    uint64_t t1 = dev::globaltimer();
    if (!ok) { r->errors++; r->first_bad = i; break; }
    if (i >= warm) t[r->measured++] = t1 - t0;
  }
  if (!dev::quiet(s, peer)) r->errors++;
  finish(s, peer, r);
}

__global__ void k_pong(DeviceState* s, int peer, int warm, int iters, Result* r) {
  for (int i = 0; i < warm + iters; ++i) {
    uint64_t v = uint64_t(i) + 1;
    if (!dev::wait_eq(s, kPingOff, v) || !dev::put8(s, peer, kPingOff, v)) { r->errors++; r->first_bad = i; break; }
  }
  if (!dev::quiet(s, peer)) r->errors++;
  finish(s, peer, r);
}

// A failed test asks the NIC emulation for its state (softnic with SOFTNIC_DEBUG=2 dumps on
// SIGUSR2): both PEs usually give up at once, so the pair runner finds nobody left to ask.
static void request_nic_state_dump() {
  struct sigaction cur {};
  if (sigaction(SIGUSR2, nullptr, &cur) != 0 || cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN) return;
  raise(SIGUSR2);
  usleep(500000);  // the other threads print their backtraces
}

static void usage() {
  fprintf(stderr, "usage: gda_bench --pe N --npes 2 --dir DIR [--test all|put|get|fadd|pingpong] "
                  "[--warmup N] [--iters N] [--json FILE] [--device-timeout SECONDS] "
                  "[--barrier-timeout SECONDS] [--nic-buf gpu|host] [--uar-map driver|runtime] [--verbose]\n");
  exit(2);
}

#define CK(call)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "pe %d: %s failed: %s\n", pe, #call, cudaGetErrorString(e_));    \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

// A crash prints where it happened (there is no debugger on the GPU machine), then goes on to
// whatever handled the signal before (a profiler's, or the default action).
struct sigaction g_crash_before[NSIG];
void on_crash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  dprintf(STDERR_FILENO, "gda_bench: signal %d; backtrace (hidden functions: addr2line -f -C -e LIB OFFSET):\n", sig);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  sigaction(sig, &g_crash_before[sig], nullptr);
  raise(sig);
}

int main(int argc, char** argv) {
  void* warm_up[1];
  backtrace(warm_up, 1);  // loads the unwinder now, not inside the handler
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) {
    struct sigaction sa {};
    sa.sa_handler = &on_crash;
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, &g_crash_before[sig]);
  }
  int pe = -1, npes = 2, warm = 1000, iters = 5000;
  std::string dir, test = "all", json;
  bool verbose = false;
  double device_timeout_s = Options{}.device_timeout_s;
  double barrier_timeout_s = Options{}.barrier_timeout_s;
  Options::NicBuf nic_buf = Options{}.nic_buf;
  Options::UarMap uar_map = Options{}.uar_map;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { if (i + 1 >= argc) usage(); return argv[++i]; };
    // A number, or a one-line error naming the option.
    auto num = [&]() -> double {
      std::string v = next();
      char* end = nullptr;
      double d = strtod(v.c_str(), &end);
      if (v.empty() || *end) {
        fprintf(stderr, "gda_bench: %s needs a number, got '%s'\n", a.c_str(), v.c_str());
        exit(2);
      }
      return d;
    };
    if (a == "--pe") pe = int(num());
    else if (a == "--npes") npes = int(num());
    else if (a == "--dir") dir = next();
    else if (a == "--test") test = next();
    else if (a == "--warmup") warm = int(num());
    else if (a == "--iters") iters = int(num());
    else if (a == "--json") json = next();
    else if (a == "--device-timeout") device_timeout_s = num();
    else if (a == "--barrier-timeout") barrier_timeout_s = num();
    else if (a == "--nic-buf") { if (!parse_nic_buf(next(), &nic_buf)) usage(); }
    else if (a == "--uar-map") { if (!parse_uar_map(next(), &uar_map)) usage(); }
    else if (a == "--verbose") verbose = true;
    else usage();
  }
  if (pe < 0 || dir.empty() || npes != 2 || iters < 1 || warm < 0) usage();
  int peer = 1 - pe;

  Options o;
  o.pe = pe;
  o.npes = npes;
  o.dir = dir;
  o.verbose = verbose;
  o.device_timeout_s = device_timeout_s;
  o.barrier_timeout_s = barrier_timeout_s;
  o.nic_buf = nic_buf;
  o.uar_map = uar_map;
  Context ctx;
  if (ctx.init(o)) {
    fprintf(stderr, "gda_bench: setup failed: %s\n", ctx.error().c_str());
    return 1;
  }
  // Every kernel is loaded before the first launch: k_barrier spins until the peer arrives, and
  // under lazy loading the load of the next kernel would wait behind it (docs/gda.md).
  const void* kernels[] = {(const void*)k_barrier, (const void*)k_put, (const void*)k_get,
                           (const void*)k_fadd, (const void*)k_ping, (const void*)k_pong};
  std::string kerr;
  if (load_kernels(kernels, int(sizeof kernels / sizeof kernels[0]), &kerr)) {
    fprintf(stderr, "gda_bench: pe %d: %s\n", pe, kerr.c_str());
    return 1;
  }
  DeviceState* s = ctx.device_state();
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  uint64_t* d_t = nullptr;
  Result* d_r = nullptr;
  CK(cudaMalloc(&d_t, sizeof(uint64_t) * iters));
  CK(cudaMalloc(&d_r, sizeof(Result)));

  // Owner-side initial values: get pattern, zeroed counter and ping flag.
  std::vector<uint64_t> pat(kSlots);
  for (uint64_t j = 0; j < kSlots; ++j) pat[j] = get_pattern(j);
  CK(cudaMemcpy(ctx.heap() + kGetOff, pat.data(), 8 * kSlots, cudaMemcpyHostToDevice));

  std::vector<std::string> tests;
  if (test == "all") tests = {"put", "get", "fadd", "pingpong"};
  else tests = {test};
  for (const std::string& name : tests)
    if (name != "put" && name != "get" && name != "fadd" && name != "pingpong") usage();

  FILE* jf = json.empty() ? nullptr : fopen(json.c_str(), "w");
  if (!json.empty() && !jf) {
    fprintf(stderr, "gda_bench: pe %d: cannot write %s: %s\n", pe, json.c_str(), strerror(errno));
    return 1;
  }
  if (jf) fprintf(jf, "[\n");
  int failures = 0;
  bool first_json = true;
  std::string broken_by;  // a failed test leaves the QP in error: later tests are not run
  for (const std::string& name : tests) {
    const char* label = name == "put" ? "Put+Quiet" : name == "get" ? "Get" : name == "fadd" ? "Atomic FetchAdd" : "Ping-Pong RTT";
    if (!broken_by.empty()) {
      printf("pe %d: %-16s not run: the QP failed in %s\n", pe, label, broken_by.c_str());
      if (jf && pe == 0) {
        fprintf(jf, "%s  {\"benchmark\": \"%s\", \"label\": \"%s\", \"run\": false, \"reason\": \"the QP failed in %s\"}",
                first_json ? "" : ",\n", name.c_str(), label, broken_by.c_str());
        first_json = false;
      }
      failures++;
      continue;
    }
    CK(cudaMemset(ctx.heap() + kCounterOff, 0, 64));
    CK(cudaMemset(ctx.heap() + kPingOff, 0, 64));
    CK(cudaMemset(d_r, 0, sizeof(Result)));
    CK(cudaDeviceSynchronize());
    k_barrier<<<1, 1, 0, st>>>(s, d_r);
    bool timed = pe == 0;
    if (pe == 0) {
      if (name == "put") k_put<<<1, 1, 0, st>>>(s, peer, warm, iters, d_t, d_r);
      else if (name == "get") k_get<<<1, 1, 0, st>>>(s, peer, warm, iters, d_t, d_r);
      else if (name == "fadd") k_fadd<<<1, 1, 0, st>>>(s, peer, warm, iters, d_t, d_r);
      else k_ping<<<1, 1, 0, st>>>(s, peer, warm, iters, d_t, d_r);
    } else if (name == "pingpong") {
      k_pong<<<1, 1, 0, st>>>(s, peer, warm, iters, d_r);
    }
    k_barrier<<<1, 1, 0, st>>>(s, d_r);
    CK(cudaError_t(sleep_until_done(st)));
    CK(cudaGetLastError());
    Result r{};
    CK(cudaMemcpy(&r, d_r, sizeof r, cudaMemcpyDeviceToHost));
    WaitFailure wf{};
    if (ctx.read_failure(&wf)) {
      fprintf(stderr, "gda_bench: %s\n", ctx.error().c_str());
      return 1;
    }
    bool ok = r.errors == 0 && r.qp_error == 0 && wf.kind == 0;
    if (!ok) {
      failures++;
      broken_by = name;
      if (wf.kind) printf("%s\n", describe_failure(wf, pe).c_str());
      fflush(stdout);
      request_nic_state_dump();
    }
    if (!timed) {
      printf("pe %d: %-8s target side %s (errors %llu, qp error 0x%x)\n", pe, name.c_str(),
             ok ? "ok" : "FAILED", r.errors, r.qp_error);
      continue;
    }
    // Statistics over the iterations that were measured, never over unfilled entries.
    size_t m = size_t(std::min<unsigned long long>(r.measured, (unsigned long long)iters));
    std::vector<uint64_t> t(m);
    if (m) CK(cudaMemcpy(t.data(), d_t, sizeof(uint64_t) * m, cudaMemcpyDeviceToHost));
    std::sort(t.begin(), t.end());
    double sum = 0;
    for (uint64_t x : t) sum += double(x);
    auto q = [&](double p) { return double(t[std::min<size_t>(t.size() - 1, size_t(p * (t.size() - 1) + 0.5))]) / 1000.0; };
    if (m)
      printf("pe %d: %-16s median %8.2f us  p99 %8.2f us  min %8.2f us  max %8.2f us  (%zu of %d measured)  verified: %s (errors %llu, qp error 0x%x)\n",
             pe, label, q(0.5), q(0.99), q(0.0), q(1.0), m, iters, ok ? "yes" : "NO", r.errors, r.qp_error);
    else
      printf("pe %d: %-16s nothing measured (failed during warm-up)  verified: NO (errors %llu, qp error 0x%x)\n",
             pe, label, r.errors, r.qp_error);
    if (jf) {
      fprintf(jf, "%s  {\"benchmark\": \"%s\", \"label\": \"%s\", \"run\": true, \"pes\": %d, \"nic_buf\": \"%s\", \"size_bytes\": 8, \"warmup\": %d, "
                  "\"iterations\": %d, \"measured\": %zu, ", first_json ? "" : ",\n", name.c_str(), label, npes,
              nic_buf_name(nic_buf), warm, iters, m);
      if (m)
        fprintf(jf, "\"median_us\": %.3f, \"p99_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"mean_us\": %.3f, ",
                q(0.5), q(0.99), q(0.0), q(1.0), sum / double(m) / 1000.0);
      else
        fprintf(jf, "\"median_us\": null, \"p99_us\": null, \"min_us\": null, \"max_us\": null, \"mean_us\": null, ");
      fprintf(jf, "\"verified\": %s, \"errors\": %llu, \"qp_error\": %u, \"timer\": \"globaltimer\"}",
              ok ? "true" : "false", r.errors, r.qp_error);
      first_json = false;
    }
  }
  if (jf) {
    fprintf(jf, "\n]\n");
    fclose(jf);
  }
  ctx.host_barrier("done");
  // What this PE's GPU threads rang: one doorbell per WQEBB on each QP (the traced runs check
  // the profiler recorded exactly these).
  DeviceState after{};
  CK(cudaMemcpy(&after, s, sizeof after, cudaMemcpyDeviceToHost));
  for (int j = 0; j < npes; ++j) {
    if (j == pe) continue;
    const Posted& p = after.qp[j].posted;
    printf("pe %d: QP 0x%x: %llu WQEBBs posted, one doorbell each\n", pe, after.qp[j].qpn,
           (unsigned long long)after.qp[j].prod);
    printf("pe %d: QP 0x%x: WQEs posted: %llu RDMA_WRITE %llu bytes, %llu RDMA_READ %llu bytes, %llu FETCH_ADD %llu bytes; "
           "remote heap 0x%llx rkey 0x%x digest 0x%016llx\n",
           pe, after.qp[j].qpn, (unsigned long long)p.wqes[kPostedWrite], (unsigned long long)p.bytes[kPostedWrite],
           (unsigned long long)p.wqes[kPostedRead], (unsigned long long)p.bytes[kPostedRead],
           (unsigned long long)p.wqes[kPostedFetchAdd], (unsigned long long)p.bytes[kPostedFetchAdd],
           (unsigned long long)after.remote_heap[j], after.rkey[j], (unsigned long long)p.digest);
  }
  cudaFree(d_t);
  cudaFree(d_r);
  cudaStreamDestroy(st);
  // GDA_RESET_AT_EXIT=1: end with cudaDeviceReset instead of the clean-up, the doorbell pages
  // still mapped (as many programs end): a profiler holding streams or events in the primary
  // context must let go of them before it goes.
  if (const char* reset = getenv("GDA_RESET_AT_EXIT"); reset && strcmp(reset, "1") == 0) CK(cudaDeviceReset());
  else ctx.finalize();
  printf("pe %d: %s\n", pe, failures ? "FAILED" : "all benchmarks verified");
  return failures ? 1 : 0;
}
