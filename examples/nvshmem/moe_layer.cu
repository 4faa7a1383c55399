// A Mixture-of-Experts layer's dispatch and combine over NVSHMEM, with a known, skewed routing:
// each of N PEs holds T tokens of H bytes and one expert; a fixed table sends HOT % of every other
// PE's tokens to the hot PE's expert and spreads the rest evenly (make_routing). Dispatch puts each
// PE's tokens into the experts' receive buffers (moe_dispatch kernel), the experts transform them
// (moe_expert), and combine puts the results back where the tokens came from (moe_combine); every
// token is checked. The bytes each PE sends each other PE are known in advance from the table:
// rank 0 writes them (--expected FILE, JSON) for the trace to be checked against (docs/case-studies.md).
// Each step runs in an NVTX range ("moe dispatch", "moe expert", "moe combine"), as a framework
// would mark its layers: the profiler puts every GPU-initiated operation in the range its kernel
// was launched in.
//
//   moe_layer --uid-file PATH [--tokens T] [--token-bytes H] [--hot-pe P] [--hot-percent HOT]
//                [--expected FILE] [--timeout-s S]
// Rank and size from Open MPI's / Slurm's environment (run_nvshmem.sh launches it). Exit 0 when
// every token came back transformed, 1 on a wrong token, 2 on bad arguments or setup, 3 when the
// GPU did not finish in time.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "program_support.h"

namespace {

constexpr int kMaxPes = 32;
constexpr unsigned char kExpertXor = 0x5a;  // what an expert does to a token: every byte ^ 0x5a

// The routing, identical on every PE: count[s][d] tokens of PE s go to PE d's expert, in
// destination order in s's send buffer; PE d receives them in source order.
struct Routing {
  int npes = 0;
  size_t token_bytes = 0;
  size_t count[kMaxPes][kMaxPes] = {};
  __host__ __device__ size_t send_offset(int s, int d) const {  // bytes, in s's send (and combine) buffer
    size_t o = 0;
    for (int x = 0; x < d; ++x) o += count[s][x];
    return o * token_bytes;
  }
  __host__ __device__ size_t recv_offset(int s, int d) const {  // bytes, in d's receive buffer
    size_t o = 0;
    for (int x = 0; x < s; ++x) o += count[x][d];
    return o * token_bytes;
  }
  __host__ __device__ size_t received(int d) const {
    size_t n = 0;
    for (int s = 0; s < npes; ++s) n += count[s][d];
    return n;
  }
};

// No PE routes a token to its own expert, so that every token crosses the network: the hot PE
// spreads all its tokens evenly over the others; every other PE sends HOT % to the hot PE and
// spreads the rest over the PEs that are neither (the first ones, in PE order, one more each).
Routing make_routing(int npes, size_t tokens, size_t token_bytes, int hot, int hot_percent) {
  Routing r;
  r.npes = npes;
  r.token_bytes = token_bytes;
  for (int s = 0; s < npes; ++s) {
    const size_t to_hot = s == hot ? 0 : tokens * size_t(hot_percent) / 100, rest = tokens - to_hot;
    if (s != hot) r.count[s][hot] = to_hot;
    const size_t others = size_t(npes - (s == hot ? 1 : 2));
    size_t k = 0;
    for (int d = 0; d < npes; ++d) {
      if (d == hot || d == s) continue;
      r.count[s][d] = rest / others + (k < rest % others ? 1 : 0);
      ++k;
    }
  }
  return r;
}

// One GPU thread issues every put (NVSHMEM orders and completes them per thread), then waits for
// them all (quiet).
__global__ void moe_dispatch(const Routing* r, char* recv, const char* send, int me) {
  for (int d = 0; d < r->npes; ++d)
    if (r->count[me][d]) nvshmem_putmem_nbi(recv + r->recv_offset(me, d), send + r->send_offset(me, d), r->count[me][d] * r->token_bytes, d);
  nvshmem_quiet();
}

__global__ void moe_expert(char* out, const char* recv, size_t bytes) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < bytes; i += size_t(gridDim.x) * blockDim.x) out[i] = char(recv[i] ^ kExpertXor);
}

__global__ void moe_combine(const Routing* r, char* combined, const char* out, int me) {
  for (int s = 0; s < r->npes; ++s)
    if (r->count[s][me]) nvshmem_putmem_nbi(combined + r->send_offset(s, me), out + r->recv_offset(s, me), r->count[s][me] * r->token_bytes, s);
  nvshmem_quiet();
}

unsigned char token_byte(int pe, size_t token, size_t k) { return (unsigned char)((pe * 31 + token * 7 + k) & 0xff); }

bool write_expected(const std::string& path, const Routing& r) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  // Per kernel, the bytes each PE's kernel moved to each other PE (no token stays on its PE).
  std::fprintf(f, "{\"npes\": %d, \"token_bytes\": %zu, \"tokens\": [", r.npes, r.token_bytes);
  for (int s = 0; s < r.npes; ++s) {
    std::fprintf(f, "%s[", s ? ", " : "");
    for (int d = 0; d < r.npes; ++d) std::fprintf(f, "%s%zu", d ? ", " : "", r.count[s][d]);
    std::fprintf(f, "]");
  }
  std::fprintf(f, "],\n \"moe_dispatch\": [");
  for (int s = 0; s < r.npes; ++s) {
    std::fprintf(f, "%s[", s ? ", " : "");
    for (int d = 0; d < r.npes; ++d) std::fprintf(f, "%s%zu", d ? ", " : "", r.count[s][d] * r.token_bytes);
    std::fprintf(f, "]");
  }
  std::fprintf(f, "],\n \"moe_combine\": [");
  for (int d = 0; d < r.npes; ++d) {  // the expert's PE d sends back to s
    std::fprintf(f, "%s[", d ? ", " : "");
    for (int s = 0; s < r.npes; ++s) std::fprintf(f, "%s%zu", s ? ", " : "", r.count[s][d] * r.token_bytes);
    std::fprintf(f, "]");
  }
  std::fprintf(f, "]}\n");
  return std::fclose(f) == 0;
}

#define CHECK_CUDA(x) NVSHMEM_TESTBED_CHECK_CUDA("moe_layer", x)

}  // namespace

int main(int argc, char** argv) {
  using namespace sigmatrace::nvshmem_testbed;
  signal(SIGUSR2, SIG_IGN);  // replaced by softnic's handler where it installs one
  int rank = launcher_int("OMPI_COMM_WORLD_RANK", "SLURM_PROCID"), npes = launcher_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
  size_t tokens = 256, token_bytes = 2048;
  int hot = 0, hot_percent = 60, timeout_s = 60;
  std::string uid_file = getenv("NVSHMEM_OPS_UID_FILE") ? getenv("NVSHMEM_OPS_UID_FILE") : "", expected;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--tokens") tokens = strtoull(v, nullptr, 10);
    else if (a == "--token-bytes") token_bytes = strtoull(v, nullptr, 10);
    else if (a == "--hot-pe") hot = atoi(v);
    else if (a == "--hot-percent") hot_percent = atoi(v);
    else if (a == "--expected") expected = v;
    else if (a == "--timeout-s") timeout_s = atoi(v);
    else if (a == "--uid-file") uid_file = v;
    else return std::fprintf(stderr, "moe_layer: unknown option %s\n", a.c_str()), 2;
  }
  if (argc % 2 == 0) return std::fprintf(stderr, "moe_layer: %s needs a value\n", argv[argc - 1]), 2;
  if (npes < 3 || npes > kMaxPes || rank < 0 || rank >= npes || hot < 0 || hot >= npes || hot_percent < 0 || hot_percent > 100 ||
      tokens < 1 || token_bytes < 1 || uid_file.empty())
    return std::fprintf(stderr, "moe_layer: need 3..%d PEs, a rank, 0 <= --hot-pe < PEs, 0 <= --hot-percent <= 100, --tokens and "
                                "--token-bytes >= 1, --uid-file PATH\n", kMaxPes), 2;
  CHECK_CUDA(cudaSetDevice(0));
  if (!uid_bootstrap("moe_layer", rank, npes, uid_file, timeout_s)) return std::fprintf(stderr, "moe_layer: PE %d: NVSHMEM initialisation failed\n", rank), 2;
  const int me = nvshmem_my_pe();
  const Routing routing = make_routing(npes, tokens, token_bytes, hot, hot_percent);
  if (me == 0 && !expected.empty() && !write_expected(expected, routing))
    return std::fprintf(stderr, "moe_layer: cannot write %s\n", expected.c_str()), 2;

  size_t max_received = 0;
  for (int d = 0; d < npes; ++d) max_received = std::max(max_received, routing.received(d));
  const size_t send_bytes = tokens * token_bytes, recv_bytes = max_received * token_bytes;
  // Symmetric: the same sizes on every PE.
  auto* send = static_cast<char*>(nvshmem_malloc(send_bytes));
  auto* combined = static_cast<char*>(nvshmem_calloc(1, send_bytes));
  auto* recv = static_cast<char*>(nvshmem_calloc(1, recv_bytes));
  auto* out = static_cast<char*>(nvshmem_calloc(1, recv_bytes));
  Routing* routing_gpu = nullptr;
  CHECK_CUDA(cudaMalloc(&routing_gpu, sizeof(Routing)));
  if (!send || !combined || !recv || !out) return std::fprintf(stderr, "moe_layer: nvshmem_malloc failed\n"), 2;
  CHECK_CUDA(cudaMemcpy(routing_gpu, &routing, sizeof routing, cudaMemcpyHostToDevice));
  std::vector<unsigned char> tokens_in(send_bytes);
  for (size_t t = 0; t < tokens; ++t)
    for (size_t k = 0; k < token_bytes; ++k) tokens_in[t * token_bytes + k] = token_byte(me, t, k);
  CHECK_CUDA(cudaMemcpy(send, tokens_in.data(), send_bytes, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  nvshmem_barrier_all();

  nvtxRangePushA("moe dispatch");
  moe_dispatch<<<1, 1, 0, s>>>(routing_gpu, recv, send, me);
  CHECK_CUDA(cudaGetLastError());
  if (!wait_for_stream("moe_layer", me, s, timeout_s, "moe_dispatch")) return 2;
  nvtxRangePop();
  nvshmem_barrier_all();  // every PE's tokens are in their experts' buffers
  nvtxRangePushA("moe expert");
  moe_expert<<<64, 256, 0, s>>>(out, recv, routing.received(me) * token_bytes);
  CHECK_CUDA(cudaGetLastError());
  if (!wait_for_stream("moe_layer", me, s, timeout_s, "moe_expert")) return 2;
  nvtxRangePop();
  nvtxRangePushA("moe combine");
  moe_combine<<<1, 1, 0, s>>>(routing_gpu, combined, out, me);
  CHECK_CUDA(cudaGetLastError());
  if (!wait_for_stream("moe_layer", me, s, timeout_s, "moe_combine")) return 2;
  nvtxRangePop();
  nvshmem_barrier_all();  // every result is back where its token came from

  std::vector<unsigned char> back(send_bytes);
  CHECK_CUDA(cudaMemcpy(back.data(), combined, send_bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < send_bytes; ++i) wrong += back[i] != (unsigned char)(tokens_in[i] ^ kExpertXor);
  std::printf("moe_layer: PE %d: %zu tokens of %zu B (%zu to the hot PE %d), %zu received, combined: %s\n", me, tokens, token_bytes,
              routing.count[me][hot], hot, routing.received(me), wrong ? "FAIL" : "PASS");
  std::fflush(stdout);
  cudaFree(routing_gpu);
  nvshmem_free(out);
  nvshmem_free(recv);
  nvshmem_free(combined);
  nvshmem_free(send);
  nvshmem_finalize();
  return wrong ? 1 : 0;
}
