// A GPU kernel waiting on a put its peer never issues, on purpose and bounded: the test bed's
// program for sigmatrace's hang dump of GPU-initiated RDMA (run_nvshmem.sh, 2 PEs). Both PEs first
// exchange a few rounds of put-with-signal (exchange_rounds), so that the trace holds the pair's
// traffic before the hang; then one of two hangs:
//   peer-silent  PE 0's wait_for_put waits for a signal that PE 1 never sends: PE 1 launches
//                nothing and idles on the host (alive, not crashed), then joins the final barrier;
//   deadlock     both PEs' wait_then_put wait for the other's signal before sending their own,
//                so neither ever sends.
// NVSHMEM's signal_wait_until cannot give up, so each wait is a spin bounded by the GPU's clock:
// the kernel ends after --wait-s seconds, says that it timed out, and the run ends normally, its
// output the same traced or not.
//
//   nvshmem_hang --mode peer-silent|deadlock [--rounds N] [--wait-s S] [--idle-s I] [--uid-file PATH]
// Rank and size from Open MPI's / Slurm's environment; PATH defaults to NVSHMEM_HANG_UID_FILE,
// else NVSHMEM_OPS_UID_FILE (the one run_nvshmem.sh sets). I (PE 1's idle time in peer-silent
// mode) defaults to S + 2, so that PE 0's wait ends while PE 1 is still idle. Exit 0 when every
// wait timed out as planned, 1 when one did not (somebody did put), 2 on bad arguments or setup,
// 3 when the GPU did not finish in time.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "program_support.h"

namespace {

constexpr size_t kBytes = 4096;    // each warm-up put's data
constexpr int kSetupTimeoutS = 30;  // the unique id's file, and the warm-up kernel
constexpr int kHostSlackS = 20;     // the host's bound on a hanging kernel, past its own --wait-s

// Signal slots (symmetric, zeroed): the warm-up's count, and the one nobody ever sends.
constexpr int kWarmupSlot = 0, kHangSlot = 1;

__device__ uint64_t gpu_clock_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// True when *sig reached at_least before timeout_ns passed. nvshmem_signal_fetch reads the word
// afresh each time (the NIC writes it behind the SM's back).
__device__ bool wait_signal_bounded(uint64_t* sig, uint64_t at_least, uint64_t timeout_ns) {
  const uint64_t deadline = gpu_clock_ns() + timeout_ns;
  while (nvshmem_signal_fetch(sig) < at_least)
    if (gpu_clock_ns() > deadline) return false;
  return true;
}

// Each round's wait for the peer's signal keeps the PEs in step: round r's put lands before
// either goes on to round r + 1.
__global__ void exchange_rounds(char* inbox, const char* outbox, uint64_t* sig, int rounds, int peer) {
  for (int r = 0; r < rounds; ++r) {
    nvshmem_putmem_signal_nbi(inbox, outbox, kBytes, &sig[kWarmupSlot], 1, NVSHMEM_SIGNAL_ADD, peer);
    nvshmem_signal_wait_until(&sig[kWarmupSlot], NVSHMEM_CMP_GE, uint64_t(r) + 1);
    nvshmem_quiet();
  }
}

// PE 0 in peer-silent mode: the put it waits for is PE 1's to make, and PE 1 never makes it.
__global__ void wait_for_put(uint64_t* sig, int* timed_out, uint64_t timeout_ns) {
  *timed_out = !wait_signal_bounded(&sig[kHangSlot], 1, timeout_ns);
}

// Both PEs in deadlock mode: each would signal the other only after being signalled itself. The
// put is real code, only never reached, as in a program whose send waits on the wrong condition.
__global__ void wait_then_put(uint64_t* sig, int* timed_out, uint64_t timeout_ns, int peer) {
  if (!wait_signal_bounded(&sig[kHangSlot], 1, timeout_ns)) {
    *timed_out = 1;
    return;
  }
  nvshmemx_signal_op(&sig[kHangSlot], 1, NVSHMEM_SIGNAL_SET, peer);
  nvshmem_quiet();
  *timed_out = 0;
}

#define CHECK_CUDA(x) NVSHMEM_TESTBED_CHECK_CUDA("nvshmem_hang", x)

}  // namespace

int main(int argc, char** argv) {
  using namespace sigmatrace::nvshmem_testbed;
  std::signal(SIGUSR2, SIG_IGN);  // replaced by softnic's handler where it installs one
  const int rank = launcher_int("OMPI_COMM_WORLD_RANK", "SLURM_PROCID"), npes = launcher_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
  int rounds = 4, wait_s = 6, idle_s = 0;
  bool idle_given = false;
  std::string mode, uid_file;
  const char* uid_env = getenv("NVSHMEM_HANG_UID_FILE") ? getenv("NVSHMEM_HANG_UID_FILE") : getenv("NVSHMEM_OPS_UID_FILE");
  if (uid_env) uid_file = uid_env;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--mode") mode = v;
    else if (a == "--rounds") rounds = atoi(v);
    else if (a == "--wait-s") wait_s = atoi(v);
    else if (a == "--idle-s") idle_s = atoi(v), idle_given = true;
    else if (a == "--uid-file") uid_file = v;
    else return std::fprintf(stderr, "nvshmem_hang: unknown option %s\n", a.c_str()), 2;
  }
  if (argc % 2 == 0) return std::fprintf(stderr, "nvshmem_hang: %s needs a value\n", argv[argc - 1]), 2;
  if (!idle_given) idle_s = wait_s + 2;
  const bool deadlock = mode == "deadlock";
  if ((!deadlock && mode != "peer-silent") || rounds < 1 || rounds > 1000 || wait_s < 1 || wait_s > 3600 || idle_s < 0 || idle_s > 3600 || uid_file.empty())
    return std::fprintf(stderr, "nvshmem_hang: need --mode peer-silent|deadlock, 1 <= --rounds <= 1000, 1 <= --wait-s <= 3600, "
                                "0 <= --idle-s <= 3600, --uid-file PATH (or NVSHMEM_HANG_UID_FILE)\n"), 2;
  // The hangs are between one pair: a third PE would have nobody to wait for.
  if (npes != 2 || rank < 0 || rank >= npes)
    return std::fprintf(stderr, "nvshmem_hang: needs exactly 2 PEs (launched by mpirun or srun), got %d (rank %d)\n", npes, rank), 2;
  CHECK_CUDA(cudaSetDevice(0));
  if (!uid_bootstrap("nvshmem_hang", rank, npes, uid_file, kSetupTimeoutS))
    return std::fprintf(stderr, "nvshmem_hang: PE %d: NVSHMEM initialisation failed\n", rank), 2;
  const int me = nvshmem_my_pe(), peer = 1 - me;
  if (me == 0) {
    std::printf("nvshmem_hang: mode %s, %d PEs, %d rounds of %zu B, wait %d s\n", mode.c_str(), npes, rounds, kBytes, wait_s);
    std::fflush(stdout);
  }

  // Symmetric: the same sizes on every PE; the data buffer is the outbox, then the inbox.
  auto* sig = static_cast<uint64_t*>(nvshmem_calloc(2, sizeof(uint64_t)));
  auto* data = static_cast<char*>(nvshmem_calloc(2, kBytes));
  int* timed_out = nullptr;
  CHECK_CUDA(cudaMalloc(&timed_out, sizeof(int)));
  if (!sig || !data) return std::fprintf(stderr, "nvshmem_hang: nvshmem_calloc failed\n"), 2;
  // Every kernel on a stream of ours: the profiler marks kernel ends on explicit streams only.
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  nvshmem_barrier_all();

  exchange_rounds<<<1, 1, 0, s>>>(data + kBytes, data, sig, rounds, peer);
  CHECK_CUDA(cudaGetLastError());
  if (!wait_for_stream("nvshmem_hang", me, s, kSetupTimeoutS, "exchange_rounds")) return 2;
  nvshmem_barrier_all();  // both PEs' warm-up is over before either starts to hang

  const uint64_t wait_ns = uint64_t(wait_s) * 1000000000ull;
  const char* kernel = deadlock ? "wait_then_put" : "wait_for_put";
  bool as_planned = true;
  if (deadlock || me == 0) {
    if (deadlock) wait_then_put<<<1, 1, 0, s>>>(sig, timed_out, wait_ns, peer);
    else wait_for_put<<<1, 1, 0, s>>>(sig, timed_out, wait_ns);
    CHECK_CUDA(cudaGetLastError());
    if (!wait_for_stream("nvshmem_hang", me, s, wait_s + kHostSlackS, kernel)) return 2;
    int t = 0;
    CHECK_CUDA(cudaMemcpy(&t, timed_out, sizeof t, cudaMemcpyDeviceToHost));
    as_planned = t == 1;
    if (!as_planned) std::fprintf(stderr, "nvshmem_hang: PE %d: %s was signalled: it was meant to time out\n", me, kernel);
    else if (deadlock)
      std::printf("nvshmem_hang: PE %d: %s timed out after %d s: each PE waits for the other's put (deadlock)\n", me, kernel, wait_s);
    else std::printf("nvshmem_hang: PE 0: %s timed out after %d s: PE 1 never put\n", kernel, wait_s);
    std::fflush(stdout);
  } else {
    // PE 1 "forgets" its put: alive and idle on the host while PE 0's kernel waits for it.
    std::this_thread::sleep_for(std::chrono::seconds(idle_s));
  }
  // Both PEs get here even when a wait went wrong, so that neither is left alone in a barrier.
  nvshmem_barrier_all();

  cudaFree(timed_out);
  nvshmem_free(data);
  nvshmem_free(sig);
  nvshmem_finalize();
  return as_planned ? 0 : 1;
}
