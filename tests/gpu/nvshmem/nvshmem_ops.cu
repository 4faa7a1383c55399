// NVSHMEM's device API over the remote transport, checked: N PEs (processes) in a ring, each one
// GPU thread putting, getting and doing every kind of atomic on its successor (RC QPs), an
// atomic on itself (the DC initiator's loopback to its own DCT), and a put with signal; every
// result is checked afterwards. The test bed's NVSHMEM program for softnic (run_nvshmem.sh),
// traced or not; nothing in it knows about either.
//
//   nvshmem_ops --rank R --npes N --uid-file PATH [--iters K] [--bytes B] [--timeout-s S]
// R and N default to Open MPI's / Slurm's environment (the program links no MPI), PATH to
// NVSHMEM_OPS_UID_FILE; rank 0 writes NVSHMEM's unique id to PATH, the others wait for it. Exit 0 when every check passed,
// 1 on a failed check, 2 on bad arguments or setup, 3 when the GPU did not finish in time
// (the host then says which step it waited for and asks softnic for a state dump: SIGUSR2).
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "program_support.h"

namespace {

// The symmetric layout every PE allocates (nvshmem_calloc: zeroed).
struct Heap {
  uint64_t fadd64, cswap64, and64, or64, xor64, set64, self64, signal;
  int fadd32, cswap32, pad32[2];
};

// What each iteration returns to the host (one slot per iteration).
struct Fetched {
  uint64_t fadd64, cswap64, and64, or64, xor64, self64;
  int fadd32, cswap32;
};

__global__ void exchange_kernel(Heap* heap, char* inbox, char* outbox, char* fetched_data, Fetched* fetched, size_t bytes, int iters,
                                int me, int npes) {
  const int next = (me + 1) % npes;
  for (int i = 0; i < iters; ++i) {
    Fetched& f = fetched[i];
    // Data: our outbox into our slot of the successor's inbox, and the successor's outbox back.
    nvshmem_putmem(inbox + size_t(me) * bytes, outbox, bytes, next);
    nvshmem_getmem(fetched_data + size_t(i) * bytes, outbox, bytes, next);
    // 8-byte atomics: plain fetch-add and compare-swap, and the masked forms NVSHMEM makes of
    // and, or, xor and set.
    f.fadd64 = nvshmem_uint64_atomic_fetch_add(&heap->fadd64, 1, next);
    f.cswap64 = nvshmem_uint64_atomic_compare_swap(&heap->cswap64, 0, uint64_t(me) + 1, next);
    f.and64 = nvshmem_uint64_atomic_fetch_and(&heap->and64, ~(uint64_t(1) << (i % 64)), next);
    f.or64 = nvshmem_uint64_atomic_fetch_or(&heap->or64, uint64_t(1) << (i % 64), next);
    f.xor64 = nvshmem_uint64_atomic_fetch_xor(&heap->xor64, uint64_t(0x5a5a) << (i % 48), next);
    nvshmem_uint64_atomic_set(&heap->set64, uint64_t(i) + 1, next);
    // 4-byte atomics: the masked forms only.
    f.fadd32 = nvshmem_int_atomic_fetch_add(&heap->fadd32, 1, next);
    f.cswap32 = nvshmem_int_atomic_compare_swap(&heap->cswap32, 0, me + 1, next);
    // On ourselves: the DC initiator's loopback.
    f.self64 = nvshmem_uint64_atomic_fetch_add(&heap->self64, 5, me);
    // A put with a signal, whose value tells the successor how far we are.
    nvshmem_putmem_signal(inbox + size_t(me) * bytes, outbox, bytes, &heap->signal, uint64_t(i) + 1, NVSHMEM_SIGNAL_SET, next);
    nvshmem_quiet();
  }
}

struct Options {
  int rank = -1, npes = -1, iters = 4, timeout_s = 60;
  size_t bytes = 4096;
  std::string uid_file;
};

bool parse(int argc, char** argv, Options* o) {
  o->rank = sigmatrace::nvshmem_testbed::launcher_int("OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
  o->npes = sigmatrace::nvshmem_testbed::launcher_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
  if (const char* f = getenv("NVSHMEM_OPS_UID_FILE")) o->uid_file = f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return fprintf(stderr, "nvshmem_ops: %s needs a value\n", a.c_str()), false;
    if (a == "--rank") o->rank = atoi(v);
    else if (a == "--npes") o->npes = atoi(v);
    else if (a == "--iters") o->iters = atoi(v);
    else if (a == "--bytes") o->bytes = strtoull(v, nullptr, 10);
    else if (a == "--timeout-s") o->timeout_s = atoi(v);
    else if (a == "--uid-file") o->uid_file = v;
    else return fprintf(stderr, "nvshmem_ops: unknown option %s\n", a.c_str()), false;
    ++i;
  }
  if (o->npes < 2 || o->rank < 0 || o->rank >= o->npes || o->iters < 1 || o->iters > 64 || o->bytes < 8 || o->uid_file.empty())
    return fprintf(stderr, "nvshmem_ops: need --rank R --npes N (N >= 2) --uid-file PATH, 1 <= --iters <= 64, --bytes >= 8\n"), false;
  return true;
}

#define CHECK_CUDA(x) NVSHMEM_TESTBED_CHECK_CUDA("nvshmem_ops", x)

int failures = 0;
template <typename T>
void expect(const Options& o, const char* what, int i, T got, T want) {
  if (got == want) return;
  if (failures++ < 20)
    fprintf(stderr, "nvshmem_ops: PE %d: %s (iteration %d): got 0x%" PRIx64 ", expected 0x%" PRIx64 "\n", o.rank, what, i, uint64_t(got),
            uint64_t(want));
}

char pattern(int pe, size_t k) { return char((pe * 131 + k * 7) & 0xff); }

}  // namespace

int main(int argc, char** argv) {
  signal(SIGUSR2, SIG_IGN);  // replaced by softnic's handler where it installs one
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  CHECK_CUDA(cudaSetDevice(0));
  if (!sigmatrace::nvshmem_testbed::uid_bootstrap("nvshmem_ops", o.rank, o.npes, o.uid_file, o.timeout_s)) return fprintf(stderr, "nvshmem_ops: PE %d: NVSHMEM initialisation failed\n", o.rank), 2;
  const int me = nvshmem_my_pe(), npes = nvshmem_n_pes(), prev = (me + npes - 1) % npes, next = (me + 1) % npes;
  printf("nvshmem_ops: PE %d of %d initialised (init status %d)\n", me, npes, nvshmemx_init_status());
  auto* heap = static_cast<Heap*>(nvshmem_calloc(1, sizeof(Heap)));
  auto* inbox = static_cast<char*>(nvshmem_calloc(size_t(npes), o.bytes));
  auto* outbox = static_cast<char*>(nvshmem_malloc(o.bytes));
  auto* fetched_data = static_cast<char*>(nvshmem_calloc(size_t(o.iters), o.bytes));
  Fetched* fetched = nullptr;
  CHECK_CUDA(cudaMalloc(&fetched, sizeof(Fetched) * size_t(o.iters)));
  if (!heap || !inbox || !outbox || !fetched_data) return fprintf(stderr, "nvshmem_ops: nvshmem_malloc failed\n"), 2;
  std::vector<char> out(o.bytes);
  for (size_t k = 0; k < o.bytes; ++k) out[k] = pattern(me, k);
  CHECK_CUDA(cudaMemcpy(outbox, out.data(), o.bytes, cudaMemcpyHostToDevice));
  const uint64_t all_ones = ~uint64_t(0);
  CHECK_CUDA(cudaMemcpy(&heap->and64, &all_ones, 8, cudaMemcpyHostToDevice));
  nvshmem_barrier_all();

  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  exchange_kernel<<<1, 1, 0, s>>>(heap, inbox, outbox, fetched_data, fetched, o.bytes, o.iters, me, npes);
  CHECK_CUDA(cudaGetLastError());
  if (!sigmatrace::nvshmem_testbed::wait_for_stream("nvshmem_ops", o.rank, s, o.timeout_s, "exchange_kernel")) return 2;
  nvshmem_barrier_all();

  // What our predecessor did to us, and what our successor's heap answered.
  Heap h{};
  std::vector<Fetched> f(size_t(o.iters));
  std::vector<char> in(size_t(npes) * o.bytes), got(size_t(o.iters) * o.bytes);
  CHECK_CUDA(cudaMemcpy(&h, heap, sizeof h, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(f.data(), fetched, sizeof(Fetched) * f.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(in.data(), inbox, in.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got.data(), fetched_data, got.size(), cudaMemcpyDeviceToHost));
  const uint64_t k = uint64_t(o.iters);
  uint64_t and_want = ~uint64_t(0), or_want = 0, xor_want = 0;
  for (int i = 0; i < o.iters; ++i) {
    expect(o, "8-byte fetch-add's old value", i, f[size_t(i)].fadd64, uint64_t(i));
    expect(o, "4-byte fetch-add's old value", i, f[size_t(i)].fadd32, i);
    expect(o, "8-byte compare-swap's old value", i, f[size_t(i)].cswap64, i == 0 ? uint64_t(0) : uint64_t(me) + 1);
    expect(o, "4-byte compare-swap's old value", i, f[size_t(i)].cswap32, i == 0 ? 0 : me + 1);
    expect(o, "fetch-and's old value", i, f[size_t(i)].and64, and_want);
    expect(o, "fetch-or's old value", i, f[size_t(i)].or64, or_want);
    expect(o, "fetch-xor's old value", i, f[size_t(i)].xor64, xor_want);
    expect(o, "fetch-add on itself", i, f[size_t(i)].self64, uint64_t(5 * i));
    and_want &= ~(uint64_t(1) << (i % 64));
    or_want |= uint64_t(1) << (i % 64);
    xor_want ^= uint64_t(0x5a5a) << (i % 48);
    for (size_t b = 0; b < o.bytes; ++b)
      if (got[size_t(i) * o.bytes + b] != pattern(next, b)) {
        expect(o, "get's data", i, int(got[size_t(i) * o.bytes + b]), int(pattern(next, b)));
        break;
      }
  }
  expect(o, "8-byte fetch-add target", -1, h.fadd64, k);
  expect(o, "4-byte fetch-add target", -1, h.fadd32, int(k));
  expect(o, "8-byte compare-swap target", -1, h.cswap64, uint64_t(prev) + 1);
  expect(o, "4-byte compare-swap target", -1, h.cswap32, prev + 1);
  expect(o, "and target", -1, h.and64, and_want);
  expect(o, "or target", -1, h.or64, or_want);
  expect(o, "xor target", -1, h.xor64, xor_want);
  expect(o, "set target", -1, h.set64, k);
  expect(o, "self target", -1, h.self64, 5 * k);
  expect(o, "signal", -1, h.signal, k);
  for (size_t b = 0; b < o.bytes; ++b)
    if (in[size_t(prev) * o.bytes + b] != pattern(prev, b)) {
      expect(o, "put's data", -1, int(in[size_t(prev) * o.bytes + b]), int(pattern(prev, b)));
      break;
    }
  printf("nvshmem_ops: PE %d: %d iterations of put/get %zu B, 8-byte fetch-add, compare-swap, and, or, xor, set, 4-byte fetch-add, "
         "compare-swap, self fetch-add, put-signal: %s\n",
         me, o.iters, o.bytes, failures ? "FAIL" : "PASS");
  fflush(stdout);
  cudaFree(fetched);
  nvshmem_free(fetched_data);
  nvshmem_free(outbox);
  nvshmem_free(inbox);
  nvshmem_free(heap);
  nvshmem_finalize();
  return failures ? 1 : 0;
}
