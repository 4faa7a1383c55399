// NCCL all-reduce benchmark, one process per GPU, written against NCCL's public C API (issue #8).
//
//   nccl_allreduce_bench --ranks N [--bytes 1M] [--warmup 5] [--reps 5] [--iters 20]
//   mpirun -np N nccl_allreduce_bench --id-file /shared/path/id [options]
//
// Started with --ranks N, the process is a launcher: it checks that NCCL loads and that N GPUs are
// visible, then fork+execs /proc/self/exe once per rank (exec, not a bare fork, so that a profiler
// preloaded into the launcher traces every rank as a process of its own) and waits for them. Under
// mpirun (OMPI_COMM_WORLD_RANK/SIZE) each process is a rank itself. Rank 0 creates NCCL's unique id
// and publishes it through --id-file (written atomically with rename); the other ranks poll for it.
//
// Each rank uses GPU (local rank % visible GPUs), all-reduces --bytes of float32 (sum, out of place)
// --warmup times, then times --iters all-reduces per repetition with CUDA events on its stream, and
// checks a sample of the result (rank r contributes r+1, so every element is N(N+1)/2). Rank 0 prints
// one line per repetition and a median line, all key=value:
//   rep=0 bytes=1048576 iters=20 time_us=123.4 algbw_GBps=8.50 busbw_GBps=8.50
//   median bytes=1048576 iters=20 reps=5 ranks=2 time_us=... algbw_GBps=... busbw_GBps=...
// (busbw = algbw * 2(N-1)/N, as nccl-tests reports it.)
//
// NCCL is loaded with dlopen (--nccl-lib PATH, else $NCCL_BENCH_LIB, else libnccl.so.2, libnccl.so),
// so the benchmark builds without NCCL's headers and runs with NCCL from a package, a pip wheel or a
// framework. Exit status: 0 success, 1 an NCCL/CUDA/system error (one line naming the call), 2 bad
// options, 77 skipped (fewer GPUs than ranks, or no NCCL found), printed as "SKIPPED: <reason>".
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- The part of NCCL's public API this program uses, declared from its documentation. ----------
// Enumerations are C enums (int-sized); values are the documented, stable ones.
namespace nccl {
using Result = int;  // ncclResult_t: 0 = ncclSuccess
constexpr Result kSuccess = 0;
constexpr Result kInProgress = 7;
using DataType = int;  // ncclDataType_t
constexpr DataType kFloat32 = 7;
using RedOp = int;  // ncclRedOp_t
constexpr RedOp kSum = 0;
struct UniqueId {  // ncclUniqueId: 128 opaque bytes, passed by value to ncclCommInitRank
  char internal[128];
};
static_assert(sizeof(UniqueId) == 128);
struct CommOpaque;
using Comm = CommOpaque*;  // ncclComm_t

struct Api {
  void* handle = nullptr;
  std::string path;  // the file dlopen resolved the name to
  Result (*GetVersion)(int* version) = nullptr;
  Result (*GetUniqueId)(UniqueId* id) = nullptr;
  Result (*CommInitRank)(Comm* comm, int nranks, UniqueId id, int rank) = nullptr;
  Result (*AllReduce)(const void* sendbuff, void* recvbuff, size_t count, DataType type, RedOp op, Comm comm,
                      cudaStream_t stream) = nullptr;
  Result (*CommFinalize)(Comm comm) = nullptr;  // optional (NCCL >= 2.14)
  Result (*CommDestroy)(Comm comm) = nullptr;
  Result (*CommGetAsyncError)(Comm comm, Result* async_error) = nullptr;  // optional
  const char* (*GetErrorString)(Result result) = nullptr;
  const char* (*GetLastError)(Comm comm) = nullptr;  // optional (NCCL >= 2.13)
};
}  // namespace nccl

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkip = 77;
const char* const kProg = "nccl_allreduce_bench";
std::string g_who;  // "rank 3: " once this process is a rank

[[noreturn]] void fail(int code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char* p = msg; *p; ++p)
    if (*p == '\n' || *p == '\r') *p = ' ';  // one line, whatever a library's message contains
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s%s\n", kProg, g_who.c_str(), msg);
  std::exit(code);
}

[[noreturn]] void skip(const std::string& reason) {
  std::printf("SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::exit(kExitSkip);
}

// "1M" -> 1048576; accepts K, M, G (binary multiples, optionally followed by B or iB) or plain bytes.
bool parse_size(const std::string& text, size_t* out) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos, 10);
  } catch (...) {
    return false;
  }
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  std::string suffix = text.substr(pos);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'B': shift = 0; break;
      default: return false;
    }
    std::string rest = suffix.substr(1);
    if (suffix[0] == 'B' ? !rest.empty() : !(rest.empty() || rest == "B" || rest == "IB")) return false;
  }
  if (v > (~0ULL >> shift)) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

std::string version_string(int code) {
  // NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on.
  int major, minor, patch;
  if (code >= 10000) {
    major = code / 10000, minor = code / 100 % 100, patch = code % 100;
  } else {
    major = code / 1000, minor = code / 100 % 10, patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// ---- Loading NCCL -----------------------------------------------------------------------------------
// Returns false with *why set when the library cannot be loaded; exits when it loads but lacks the API.
bool load_nccl(const std::string& name, nccl::Api* api, std::string* why) {
  dlerror();
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *why = e ? e : ("cannot load " + name);
    return false;
  }
  api->handle = h;
  api->path = name;
  if (link_map* lm = nullptr; dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
    api->path = lm->l_name;
  auto need = [&](auto* fn, const char* sym) {
    void* p = dlsym(h, sym);
    if (!p) fail(kExitError, "%s (from %s) does not export %s: not an NCCL 2 library", api->path.c_str(), name.c_str(), sym);
    std::memcpy(fn, &p, sizeof p);
  };
  auto want = [&](auto* fn, const char* sym) {
    void* p = dlsym(h, sym);
    if (p) std::memcpy(fn, &p, sizeof p);
  };
  need(&api->GetVersion, "ncclGetVersion");
  need(&api->GetUniqueId, "ncclGetUniqueId");
  need(&api->CommInitRank, "ncclCommInitRank");
  need(&api->AllReduce, "ncclAllReduce");
  need(&api->CommDestroy, "ncclCommDestroy");
  need(&api->GetErrorString, "ncclGetErrorString");
  want(&api->CommFinalize, "ncclCommFinalize");
  want(&api->CommGetAsyncError, "ncclCommGetAsyncError");
  want(&api->GetLastError, "ncclGetLastError");
  return true;
}

// The explicit choice (--nccl-lib, else $NCCL_BENCH_LIB) must load; otherwise the default names are
// tried and their absence is a reason to skip.
void load_nccl_or_exit(const std::string& explicit_lib, nccl::Api* api) {
  std::string why;
  if (!explicit_lib.empty()) {
    if (!load_nccl(explicit_lib, api, &why)) fail(kExitError, "cannot load NCCL from %s: %s", explicit_lib.c_str(), why.c_str());
    return;
  }
  std::string whys;
  for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
    if (load_nccl(name, api, &why)) return;
    whys += (whys.empty() ? "" : "; ") + why;
  }
  skip("NCCL not found (" + whys + "); give its path with --nccl-lib PATH or NCCL_BENCH_LIB=PATH");
}

void nccl_check(const nccl::Api& api, nccl::Result r, const char* call, nccl::Comm comm = nullptr) {
  if (r == nccl::kSuccess) return;
  std::string detail;
  if (api.GetLastError) {
    const char* last = api.GetLastError(comm);
    if (last && *last) detail = std::string(": ") + last;
  }
  fail(kExitError, "%s failed: %s (ncclResult_t %d)%s", call, api.GetErrorString(r), r, detail.c_str());
}

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) fail(kExitError, "%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

int visible_gpus() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError)
    return -static_cast<int>(e);  // "no usable CUDA device" (reason for a skip, not an error)
  if (e != cudaSuccess) fail(kExitError, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
  return n;
}

void require_gpus(int needed, const char* what) {
  int n = visible_gpus();
  if (n < 0) {
    auto e = static_cast<cudaError_t>(-n);
    skip(std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
  }
  if (n < needed)
    skip(std::to_string(needed) + " " + what + " need " + std::to_string(needed) + " GPUs, " + std::to_string(n) + " visible");
}

// The path libibverbs was mapped from in this process (NCCL dlopens it; softnic ships a drop-in).
std::string mapped_library(const char* stem) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    std::string base = path.substr(path.rfind('/') + 1);
    if (base.rfind(stem, 0) == 0) return path;
  }
  return "none";
}

// ---- Options ----------------------------------------------------------------------------------------
struct Options {
  int ranks = 0;  // 0: not given
  int rank = -1;  // set for a rank started by the launcher
  int local_rank = -1;
  std::string id_file;
  std::string bytes_text = "1M";
  size_t bytes = 0;
  int warmup = 5;
  int reps = 5;
  int iters = 20;
  std::string nccl_lib;
  double timeout_s = 600;
};

// ---- Unique id rendezvous through a file ------------------------------------------------------------
// Content: a header line naming the run (so that a file left by an earlier mpirun on a shared path is
// never taken for this run's), then the 128 bytes of the id.
const char* const kIdMagic = "nccl_allreduce_bench-id-v1";

std::string run_token() {
  for (const char* v : {"NCCL_BENCH_RUN_TOKEN", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID"})
    if (const char* s = std::getenv(v); s && *s) return std::string(v) + "=" + s;
  return "";
}

void publish_id(const std::string& file, const nccl::UniqueId& id, const std::string& token) {
  std::string tmp = file + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail(kExitError, "cannot create %s: %s", tmp.c_str(), std::strerror(errno));
  std::string content = std::string(kIdMagic) + " " + token + "\n" + std::string(id.internal, sizeof id.internal);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(kExitError, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    p += w, left -= static_cast<size_t>(w);
  }
  if (fsync(fd) != 0 || close(fd) != 0) fail(kExitError, "cannot write %s: %s", tmp.c_str(), std::strerror(errno));
  if (rename(tmp.c_str(), file.c_str()) != 0)
    fail(kExitError, "cannot rename %s to %s: %s", tmp.c_str(), file.c_str(), std::strerror(errno));
}

nccl::UniqueId wait_for_id(const std::string& file, const std::string& token, double timeout_s) {
  std::string header = std::string(kIdMagic) + " " + token + "\n";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (content.size() == header.size() + sizeof(nccl::UniqueId) && content.compare(0, header.size(), header) == 0) {
        nccl::UniqueId id;
        std::memcpy(id.internal, content.data() + header.size(), sizeof id.internal);
        return id;
      }
    }
    if (std::chrono::steady_clock::now() > deadline)
      fail(kExitError, "rank 0 did not publish NCCL's unique id in %s within %.0f s", file.c_str(), timeout_s);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---- One rank -----------------------------------------------------------------------------------------
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_rank(const Options& o, int rank, int nranks, int local_rank, const std::string& token) {
  g_who = "rank " + std::to_string(rank) + ": ";
  nccl::Api api;
  load_nccl_or_exit(o.nccl_lib, &api);
  int version = 0;
  nccl_check(api, api.GetVersion(&version), "ncclGetVersion");

  int ngpus = visible_gpus();
  if (ngpus <= 0) require_gpus(1, "rank");
  int device = local_rank % ngpus;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");

  const size_t count = o.bytes / sizeof(float);
  void* send = nullptr;
  void* recv = nullptr;
  cuda_check(cudaMalloc(&send, o.bytes), "cudaMalloc");
  cuda_check(cudaMalloc(&recv, o.bytes), "cudaMalloc");
  {
    std::vector<float> fill(count, static_cast<float>(rank + 1));
    cuda_check(cudaMemcpy(send, fill.data(), o.bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  cuda_check(cudaMemset(recv, 0, o.bytes), "cudaMemset");

  nccl::UniqueId id;
  if (rank == 0) {
    nccl_check(api, api.GetUniqueId(&id), "ncclGetUniqueId");
    publish_id(o.id_file, id, token);
  } else {
    id = wait_for_id(o.id_file, token, o.timeout_s);
  }
  nccl::Comm comm = nullptr;
  nccl_check(api, api.CommInitRank(&comm, nranks, id, rank), "ncclCommInitRank");
  // ncclCommInitRank returns once every rank has joined, so all have read the id: leave no stale file.
  if (rank == 0) unlink(o.id_file.c_str());
  if (rank == 0) {
    std::printf("nccl_version=%s nccl_lib=%s ranks=%d bytes=%zu gpus_visible=%d device=%d\n", version_string(version).c_str(),
                api.path.c_str(), nranks, o.bytes, ngpus, device);
    std::printf("libibverbs=%s\n", mapped_library("libibverbs.so").c_str());
    std::fflush(stdout);
  }

  auto allreduce = [&](const char* what) {
    nccl_check(api, api.AllReduce(send, recv, count, nccl::kFloat32, nccl::kSum, comm, stream), what, comm);
  };
  auto sync = [&](const char* what) {
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess && api.CommGetAsyncError) {  // name NCCL's error when NCCL caused it
      nccl::Result async = nccl::kSuccess;
      if (api.CommGetAsyncError(comm, &async) == nccl::kSuccess && async != nccl::kSuccess && async != nccl::kInProgress)
        nccl_check(api, async, "ncclAllReduce (asynchronous error)", comm);
    }
    cuda_check(e, what);
  };

  for (int w = 0; w < o.warmup; ++w) allreduce("ncclAllReduce (warm-up)");
  sync("cudaStreamSynchronize (warm-up)");
  cuda_check(cudaMemset(recv, 0, o.bytes), "cudaMemset");  // the checked result comes from the timed runs

  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times_us;
  const double factor = 2.0 * (nranks - 1) / nranks;
  for (int r = 0; r < o.reps; ++r) {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < o.iters; ++i) allreduce("ncclAllReduce");
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    sync("cudaStreamSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    double us = 1e3 * ms / o.iters;
    times_us.push_back(us);
    if (rank == 0) {
      double algbw = static_cast<double>(o.bytes) / (us * 1e3);  // bytes per ns = GB/s
      std::printf("rep=%d bytes=%zu iters=%d time_us=%.3f algbw_GBps=%.3f busbw_GBps=%.3f\n", r, o.bytes, o.iters, us, algbw,
                  algbw * factor);
      std::fflush(stdout);
    }
  }

  // Verification: a sample of elements (evenly spaced, the last one included) must all be N(N+1)/2.
  const float expected = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2;
  const size_t stride = std::max<size_t>(1, count / 4096);
  const size_t samples = (count - 1) / stride + 1;
  std::vector<float> got(samples + 1);
  cuda_check(cudaMemcpy2D(got.data(), sizeof(float), recv, stride * sizeof(float), sizeof(float), samples, cudaMemcpyDeviceToHost),
             "cudaMemcpy2D (verification)");
  cuda_check(cudaMemcpy(&got[samples], static_cast<float*>(recv) + (count - 1), sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy (verification)");
  for (size_t s = 0; s <= samples; ++s) {
    size_t idx = s < samples ? s * stride : count - 1;
    if (got[s] != expected) fail(kExitError, "verification failed: element %zu of %zu is %g, expected %g", idx, count, got[s], expected);
  }

  if (rank == 0) {
    double us = median(times_us);
    double algbw = static_cast<double>(o.bytes) / (us * 1e3);
    std::printf("median bytes=%zu iters=%d reps=%d ranks=%d time_us=%.3f algbw_GBps=%.3f busbw_GBps=%.3f verified=%zu\n", o.bytes,
                o.iters, o.reps, nranks, us, algbw, algbw * factor, samples + 1);
    std::fflush(stdout);
  }

  if (api.CommFinalize) {
    nccl::Result fr = api.CommFinalize(comm);
    if (fr != nccl::kSuccess && fr != nccl::kInProgress) nccl_check(api, fr, "ncclCommFinalize", comm);
  }
  nccl_check(api, api.CommDestroy(comm), "ncclCommDestroy");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(stream);
  return 0;
}

// ---- The launcher -------------------------------------------------------------------------------------
volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

int launch(const Options& o, const char* argv0) {
  // Check what the ranks need before starting them, so that a missing piece is one line, not N.
  nccl::Api api;
  std::string explicit_lib = o.nccl_lib;
  if (!explicit_lib.empty()) load_nccl_or_exit(explicit_lib, &api);
  require_gpus(o.ranks, "ranks");
  if (explicit_lib.empty()) {
    load_nccl_or_exit("", &api);
    explicit_lib = api.path;  // every rank loads the file the launcher found
  }

  char dir_template[] = "/tmp/nccl_allreduce_bench.XXXXXX";
  std::string tmpdir;
  if (const char* t = std::getenv("TMPDIR"); t && *t) {
    std::string tpl = std::string(t) + "/nccl_allreduce_bench.XXXXXX";
    std::vector<char> buf(tpl.begin(), tpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data())) tmpdir = buf.data();
  }
  if (tmpdir.empty()) {
    if (!mkdtemp(dir_template)) fail(kExitError, "mkdtemp failed: %s", std::strerror(errno));
    tmpdir = dir_template;
  }
  const std::string id_file = tmpdir + "/nccl-unique-id";

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    std::vector<std::string> args = {argv0,
                                     "--rank", std::to_string(r),
                                     "--ranks", std::to_string(o.ranks),
                                     "--id-file", id_file,
                                     "--bytes", std::to_string(o.bytes),
                                     "--warmup", std::to_string(o.warmup),
                                     "--reps", std::to_string(o.reps),
                                     "--iters", std::to_string(o.iters),
                                     "--nccl-lib", explicit_lib,
                                     "--timeout", std::to_string(o.timeout_s)};
    pid_t pid = fork();
    if (pid < 0) fail(kExitError, "fork failed: %s", std::strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the launcher
      if (getppid() != parent) _exit(kExitError);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      // Identity for tools that read the usual launcher variables (the profiler records the rank).
      // These ranks are not tasks of an enclosing Slurm/PMI job (a shell inside salloc, say): drop
      // its rank variables, which would otherwise give every rank the launcher's rank.
      for (const char* v : {"PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "MPI_LOCALRANKID", "SLURM_NTASKS"})
        unsetenv(v);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv("/proc/self/exe", cargs.data());
      std::fprintf(stderr, "%s: exec of /proc/self/exe for rank %d failed: %s\n", kProg, r, std::strerror(errno));
      _exit(kExitError);
    }
    pids.push_back(pid);
  }

  // Wait for every rank; when one fails (or a signal or the timeout arrives) stop the others, since
  // they would wait for it inside NCCL forever.
  int result = 0;
  size_t running = pids.size();
  std::vector<bool> done(pids.size(), false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  bool stopping = false;
  std::chrono::steady_clock::time_point kill_at{};
  auto stop_all = [&](int sig) {
    for (size_t i = 0; i < pids.size(); ++i)
      if (!done[i]) kill(pids[i], sig);
  };
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = std::find(pids.begin(), pids.end(), pid);
      if (it == pids.end()) continue;
      size_t r = static_cast<size_t>(it - pids.begin());
      done[r] = true;
      --running;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code != 0 && !stopping) {
        if (WIFEXITED(status))
          std::fprintf(stderr, "%s: rank %zu exited with status %d; stopping the other ranks\n", kProg, r, code);
        else
          std::fprintf(stderr, "%s: rank %zu was killed by signal %d (%s); stopping the other ranks\n", kProg, r, WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
        result = code;
        stopping = true;
        stop_all(SIGTERM);
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    auto now = std::chrono::steady_clock::now();
    if (!stopping && (g_signal != 0 || now > deadline)) {
      if (g_signal != 0)
        std::fprintf(stderr, "%s: %s received; stopping the ranks\n", kProg, strsignal(g_signal));
      else
        std::fprintf(stderr, "%s: the ranks did not finish within --timeout %.0f s; stopping them\n", kProg, o.timeout_s);
      result = g_signal != 0 ? 128 + g_signal : kExitError;
      stopping = true;
      stop_all(SIGTERM);
      kill_at = now + std::chrono::seconds(10);
    }
    if (stopping && now > kill_at) stop_all(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  unlink(id_file.c_str());
  rmdir(tmpdir.c_str());
  return result;
}

long env_long(const char* name, long fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  return (*end == '\0') ? v : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"NCCL all-reduce benchmark, one process per GPU (launcher: --ranks N; or under mpirun with --id-file)"};
  app.add_option("--ranks", o.ranks, "number of ranks; without --rank and outside mpirun: start them (one per GPU)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--rank", o.rank, "this process's rank (set by the launcher)")->check(CLI::Range(0, 4095));
  app.add_option("--id-file", o.id_file, "rendezvous file for NCCL's unique id (a path all ranks see; required under mpirun)");
  app.add_option("--bytes", o.bytes_text, "message size per rank: bytes, or with a K/M/G suffix (binary: 1M = 1048576)")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed all-reduces first")->capture_default_str()->check(CLI::Range(0, 1000000));
  app.add_option("--reps", o.reps, "timed repetitions (one line each)")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--iters", o.iters, "all-reduces per repetition")->capture_default_str()->check(CLI::Range(1, 100000000));
  app.add_option("--nccl-lib", o.nccl_lib, "NCCL library to dlopen (default: $NCCL_BENCH_LIB, else libnccl.so.2, libnccl.so)");
  app.add_option("--timeout", o.timeout_s, "seconds before the launcher stops the ranks, and ranks stop waiting for the id")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e7));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", kProg, e.what(), kProg);
    return kExitUsage;
  }
  auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", kProg, msg.c_str(), kProg);
    return kExitUsage;
  };
  if (!parse_size(o.bytes_text, &o.bytes) || o.bytes == 0)
    return usage("--bytes " + o.bytes_text + ": expected a positive size such as 4096, 1M or 128M");
  if (o.bytes % sizeof(float) != 0) return usage("--bytes " + o.bytes_text + ": must be a multiple of 4 (float32 elements)");
  if (o.nccl_lib.empty())
    if (const char* e = std::getenv("NCCL_BENCH_LIB"); e && *e) o.nccl_lib = e;

  const long mpi_rank = env_long("OMPI_COMM_WORLD_RANK", -1);
  const long mpi_size = env_long("OMPI_COMM_WORLD_SIZE", -1);
  if (o.rank >= 0) {  // a rank started by the launcher
    if (o.ranks <= 0 || o.id_file.empty()) return usage("--rank needs --ranks and --id-file");
    if (o.rank >= o.ranks) return usage("--rank must be smaller than --ranks");
    return run_rank(o, o.rank, o.ranks, o.rank, "");
  }
  if (mpi_rank >= 0 && mpi_size > 0) {  // started by mpirun: this process is one rank
    if (o.id_file.empty()) return usage("under mpirun, --id-file PATH (on a file system all ranks see) is required");
    if (o.ranks > 0 && o.ranks != mpi_size)
      return usage("--ranks " + std::to_string(o.ranks) + " differs from mpirun's " + std::to_string(mpi_size) + " processes");
    const long local = env_long("OMPI_COMM_WORLD_LOCAL_RANK", mpi_rank);
    // NCCL refuses two ranks of one communicator on one GPU: skip where this node has too few.
    const long local_size = env_long("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    require_gpus(static_cast<int>(local_size), "ranks on this node");
    const std::string token = run_token();
    if (token.empty() && mpi_rank == 0)
      std::fprintf(stderr, "%s: no job id in the environment: remove %s before each run\n", kProg, o.id_file.c_str());
    return run_rank(o, static_cast<int>(mpi_rank), static_cast<int>(mpi_size), static_cast<int>(local), token);
  }
  if (o.ranks <= 0) return usage("--ranks N is required (or start one process per rank with mpirun)");
  if (!o.id_file.empty()) return usage("--id-file is chosen by the launcher (use it with mpirun)");
  return launch(o, argv[0]);
}
