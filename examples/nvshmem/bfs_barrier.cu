// A level-synchronous BFS over NVSHMEM as one persistent kernel per PE, with a known, injected
// imbalance: the paper's barrier case study (docs/case-studies.md). The graph is R-MAT (Graph500's
// parameters a=.57, b=c=.19, fixed seed, vertex labels shuffled so that the hubs spread over the
// PEs), undirected, its vertices in N equal blocks, one per PE. Each level, every PE expands its
// frontier, puts each other PE the neighbours it owns (one put per peer and level: a header of
// the sender's frontier size and the count, then the vertices; the header alone when there are
// none), waits for its puts to complete, and meets the others at a device barrier; the slow PE
// waits DELAY µs more before it.
// The run ends after the first level at which every frontier was empty (every PE knows it from
// the headers). Every vertex's level is checked against a BFS on the host.
//
//   bfs_barrier --uid-file PATH [--scale S] [--edge-factor E] [--seed X] [--slow-pe P]
//              [--delay-us D] [--expected FILE] [--timeout-s S]
// Rank and size from Open MPI's / Slurm's environment (run_nvshmem.sh launches it). Rank 0 writes
// FILE (JSON): the injected delay, the bytes each PE put each other PE at each level (from the
// host's BFS) and when each PE reached each barrier by the GPU's own clock, for the trace to be
// checked against. Exit 0 when every level is right, 1 when one is not, 2 on bad arguments or
// setup, 3 when the GPU did not finish in time.
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "program_support.h"

namespace {

constexpr int kMaxPes = 32;
constexpr int kMaxLevels = 64;
constexpr int kThreads = 512;
// A message's header, before its vertices: the sender's frontier size, the count, the level and
// the sender (so that a stale message is caught), and one int of padding. Sixteen bytes: every
// put is a data WQE, even one without vertices.
constexpr int kHeader = 4;

struct Graph {  // undirected, CSR over all vertices (every PE builds the same one)
  int vertices = 0;
  std::vector<int> row, col;
};

Graph make_rmat(int scale, int edge_factor, uint64_t seed) {
  const int n = 1 << scale;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int> label(n);
  std::iota(label.begin(), label.end(), 0);
  std::shuffle(label.begin(), label.end(), rng);
  std::vector<std::pair<int, int>> edges;
  for (int64_t e = 0; e < int64_t(n) * edge_factor; ++e) {
    int a = 0, b = 0;
    for (int bit = scale - 1; bit >= 0; --bit) {
      const double r = u(rng);
      if (r < 0.57) continue;
      if (r < 0.76) b |= 1 << bit;
      else if (r < 0.95) a |= 1 << bit;
      else a |= 1 << bit, b |= 1 << bit;
    }
    if (a == b) continue;
    edges.emplace_back(label[a], label[b]);
    edges.emplace_back(label[b], label[a]);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  Graph g;
  g.vertices = n;
  g.row.assign(n + 1, 0);
  for (auto& e : edges) ++g.row[e.first + 1];
  for (int v = 0; v < n; ++v) g.row[v + 1] += g.row[v];
  g.col.reserve(edges.size());
  for (auto& e : edges) g.col.push_back(e.second);
  return g;
}

// What the run must do, from a BFS on the host: each vertex's level, and the vertices each PE
// puts each other PE at each level (one level more than the deepest: the empty one that ends it).
struct Reference {
  std::vector<int> level;
  int levels = 0;
  std::vector<std::vector<std::vector<size_t>>> sent;  // [level][source][destination], vertices
  size_t max_message = 0;                              // the most vertices of one message
};

Reference bfs_on_host(const Graph& g, int root, int npes, int block) {
  Reference r;
  r.level.assign(g.vertices, -1);
  r.level[root] = 0;
  std::vector<int> frontier{root};
  while (true) {
    std::vector<std::vector<size_t>> sent(npes, std::vector<size_t>(npes, 0));
    std::vector<int> next;
    for (int u : frontier)
      for (int k = g.row[u]; k < g.row[u + 1]; ++k) {
        const int v = g.col[k], s = u / block, d = v / block;
        if (s != d) ++sent[s][d];
        if (r.level[v] < 0) r.level[v] = r.levels + 1, next.push_back(v);
      }
    for (auto& row : sent) r.max_message = std::max(r.max_message, *std::max_element(row.begin(), row.end()));
    r.sent.push_back(sent);
    ++r.levels;
    if (frontier.empty()) break;
    frontier.swap(next);
  }
  return r;
}

struct Args {
  const int* row;     // this PE's vertices' CSR (local rows, global neighbours)
  const int* col;
  int* level;         // this PE's vertices' levels, -1 unreached
  int* frontier;      // local indices
  int* next;
  int* next_size;     // 0 at launch
  int* inbox;         // symmetric: [2 parities][npes sources][message]
  int* outbox;        // symmetric: [npes destinations][message]
  uint64_t* arrival;  // GPU clock when this PE reached each level's barrier
  int* levels_run;
  int* overflow;      // set when a level would overrun kMaxLevels
  int* stale;         // set when a message was not this level's
  int me, npes, block, first, root, slow_pe, message_ints;
  uint64_t delay_ns;
};

__device__ uint64_t gpu_clock_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void bfs_levels(Args a) {
  __shared__ int out_count[kMaxPes];
  __shared__ int frontier_size, everyone_idle;
  const int t = threadIdx.x;
  if (t == 0) {
    frontier_size = 0;
    if (a.root / a.block == a.me) a.level[a.root - a.first] = 0, a.frontier[0] = a.root - a.first, frontier_size = 1;
    nvshmem_barrier_all();  // every PE's kernel is running before the first level's clock starts
  }
  __syncthreads();
  for (int lvl = 0;; ++lvl) {
    if (t < a.npes) out_count[t] = 0;
    __syncthreads();
    // Expand: neighbours this PE owns join the next frontier; the others go to their owner.
    for (int i = t; i < frontier_size; i += blockDim.x) {
      const int u = a.frontier[i];
      for (int k = a.row[u]; k < a.row[u + 1]; ++k) {
        const int v = a.col[k], d = v / a.block;
        if (d == a.me) {
          if (atomicCAS(&a.level[v - a.first], -1, lvl + 1) == -1) a.next[atomicAdd(a.next_size, 1)] = v - a.first;
        } else {
          a.outbox[size_t(d) * a.message_ints + kHeader + atomicAdd(&out_count[d], 1)] = v;
        }
      }
    }
    __threadfence();
    __syncthreads();
    if (t == 0) {
      const int parity = lvl & 1;
      for (int d = 0; d < a.npes; ++d) {
        if (d == a.me) continue;
        int* m = a.outbox + size_t(d) * a.message_ints;
        m[0] = frontier_size;
        m[1] = out_count[d];
        m[2] = lvl;
        m[3] = a.me;
        __threadfence();
        nvshmem_putmem_nbi(a.inbox + (size_t(parity) * a.npes + a.me) * a.message_ints, m, sizeof(int) * size_t(kHeader + out_count[d]), d);
      }
      // The puts complete here, so that the barrier's first signal leaves at the arrival the GPU's
      // clock records (inside the barrier, a quiet still waiting for puts would delay it).
      nvshmem_quiet();
      if (a.me == a.slow_pe)
        for (const uint64_t until = gpu_clock_ns() + a.delay_ns; gpu_clock_ns() < until;) {
        }
      a.arrival[lvl] = gpu_clock_ns();
      nvshmem_barrier_all();  // every PE's puts are complete: the inboxes of this level are whole
      everyone_idle = frontier_size == 0;
      for (int s = 0; s < a.npes; ++s)
        if (s != a.me && __ldcv(&a.inbox[(size_t(parity) * a.npes + s) * a.message_ints]) != 0) everyone_idle = 0;
    }
    __syncthreads();
    // Receive: the vertices others found for us.
    for (int s = 0; s < a.npes; ++s) {
      if (s == a.me) continue;
      const int* m = a.inbox + (size_t(lvl & 1) * a.npes + s) * a.message_ints;
      // __ldcv: the NIC wrote this message since this SM last read the buffer (two levels ago).
      const int count = __ldcv(&m[1]);
      if (t == 0 && (__ldcv(&m[2]) != lvl || __ldcv(&m[3]) != s)) atomicExch(a.stale, 1);
      for (int i = t; i < count; i += blockDim.x) {
        const int v = __ldcv(&m[kHeader + i]) - a.first;
        if (atomicCAS(&a.level[v], -1, lvl + 1) == -1) a.next[atomicAdd(a.next_size, 1)] = v;
      }
    }
    __threadfence();
    __syncthreads();
    if (everyone_idle || lvl + 1 == kMaxLevels) {
      if (t == 0) *a.levels_run = lvl + 1, *a.overflow = !everyone_idle;
      return;
    }
    if (t == 0) {
      frontier_size = *a.next_size;
      *a.next_size = 0;
      int* f = a.frontier;
      a.frontier = a.next;
      a.next = f;
    }
    __syncthreads();
    // Every thread's own copy of the swapped pointers.
    if (t != 0) {
      int* f = a.frontier;
      a.frontier = a.next;
      a.next = f;
    }
  }
}

// Each PE's barrier arrivals into PE 0's table, for rank 0's report (a kernel of its own, so that
// its put is not the BFS kernel's).
__global__ void gather_arrivals(uint64_t* all, const uint64_t* mine, int levels, int me) {
  nvshmem_putmem(all + size_t(me) * kMaxLevels, mine, sizeof(uint64_t) * size_t(levels), 0);
  nvshmem_quiet();
}

bool write_expected(const std::string& path, const Reference& r, int npes, int slow_pe, uint64_t delay_ns, const std::vector<uint64_t>& arrival,
                    int scale, int edge_factor, uint64_t seed, int root, size_t edges) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"npes\": %d, \"scale\": %d, \"edge_factor\": %d, \"seed\": %llu, \"root\": %d, \"edges\": %zu,\n", npes, scale, edge_factor,
               (unsigned long long)seed, root, edges);
  std::fprintf(f, " \"slow_pe\": %d, \"delay_ns\": %llu, \"levels\": %d,\n \"put_bytes\": [", slow_pe, (unsigned long long)delay_ns, r.levels);
  for (int l = 0; l < r.levels; ++l) {
    std::fprintf(f, "%s\n  [", l ? "," : "");
    for (int s = 0; s < npes; ++s) {
      std::fprintf(f, "%s[", s ? ", " : "");
      for (int d = 0; d < npes; ++d)
        std::fprintf(f, "%s%zu", d ? ", " : "", s == d ? size_t(0) : sizeof(int) * (kHeader + r.sent[l][s][d]));
      std::fprintf(f, "]");
    }
    std::fprintf(f, "]");
  }
  std::fprintf(f, "],\n \"arrival_gpu_ns\": [");  // [level][pe], since the first arrival
  uint64_t t0 = UINT64_MAX;
  for (int p = 0; p < npes; ++p) t0 = std::min(t0, *std::min_element(arrival.begin() + size_t(p) * kMaxLevels, arrival.begin() + size_t(p) * kMaxLevels + r.levels));
  for (int l = 0; l < r.levels; ++l) {
    std::fprintf(f, "%s[", l ? ", " : "");
    for (int p = 0; p < npes; ++p) std::fprintf(f, "%s%llu", p ? ", " : "", (unsigned long long)(arrival[size_t(p) * kMaxLevels + l] - t0));
    std::fprintf(f, "]");
  }
  std::fprintf(f, "]}\n");
  return std::fclose(f) == 0;
}

#define CHECK_CUDA(x) NVSHMEM_TESTBED_CHECK_CUDA("bfs_barrier", x)

template <typename T>
T* to_gpu(const std::vector<T>& v) {
  T* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T)) != cudaSuccess) return nullptr;
  if (!v.empty() && cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) return nullptr;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sigmatrace::nvshmem_testbed;
  signal(SIGUSR2, SIG_IGN);  // replaced by softnic's handler where it installs one
  const int rank = launcher_int("OMPI_COMM_WORLD_RANK", "SLURM_PROCID"), npes = launcher_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
  int scale = 13, edge_factor = 8, slow_pe = 1, delay_us = 2000, timeout_s = 60;
  uint64_t seed = 1;
  std::string uid_file = getenv("NVSHMEM_OPS_UID_FILE") ? getenv("NVSHMEM_OPS_UID_FILE") : "", expected;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--scale") scale = atoi(v);
    else if (a == "--edge-factor") edge_factor = atoi(v);
    else if (a == "--seed") seed = strtoull(v, nullptr, 10);
    else if (a == "--slow-pe") slow_pe = atoi(v);
    else if (a == "--delay-us") delay_us = atoi(v);
    else if (a == "--expected") expected = v;
    else if (a == "--timeout-s") timeout_s = atoi(v);
    else if (a == "--uid-file") uid_file = v;
    else return std::fprintf(stderr, "bfs_barrier: unknown option %s\n", a.c_str()), 2;
  }
  if (argc % 2 == 0) return std::fprintf(stderr, "bfs_barrier: %s needs a value\n", argv[argc - 1]), 2;
  if (npes < 2 || npes > kMaxPes || rank < 0 || rank >= npes || scale < 4 || scale > 24 || edge_factor < 1 || slow_pe < -1 ||
      slow_pe >= npes || delay_us < 0 || uid_file.empty())
    return std::fprintf(stderr, "bfs_barrier: need 2..%d PEs, a rank, 4 <= --scale <= 24, --edge-factor >= 1, -1 <= --slow-pe < PEs "
                                "(-1: none), --delay-us >= 0, --uid-file PATH\n", kMaxPes), 2;
  CHECK_CUDA(cudaSetDevice(0));
  if (!uid_bootstrap("bfs_barrier", rank, npes, uid_file, timeout_s)) return std::fprintf(stderr, "bfs_barrier: PE %d: NVSHMEM initialisation failed\n", rank), 2;
  const int me = nvshmem_my_pe();

  const Graph g = make_rmat(scale, edge_factor, seed);
  int root = 0;
  for (int v = 1; v < g.vertices; ++v)
    if (g.row[v + 1] - g.row[v] > g.row[root + 1] - g.row[root]) root = v;
  const int block = (g.vertices + npes - 1) / npes, first = me * block, local = std::max(0, std::min(block, g.vertices - first));
  const Reference ref = bfs_on_host(g, root, npes, block);
  if (ref.levels > kMaxLevels) return std::fprintf(stderr, "bfs_barrier: the BFS is %d levels deep, more than %d\n", ref.levels, kMaxLevels), 2;
  std::vector<int> row(local + 1), col;
  for (int i = 0; i < local; ++i) {
    row[i] = int(col.size());
    col.insert(col.end(), g.col.begin() + g.row[first + i], g.col.begin() + g.row[first + i + 1]);
  }
  row[local] = int(col.size());

  Args a{};
  a.me = me, a.npes = npes, a.block = block, a.first = first, a.root = root, a.slow_pe = slow_pe;
  a.delay_ns = uint64_t(delay_us) * 1000;
  a.message_ints = int(kHeader + ref.max_message);
  a.row = to_gpu(row), a.col = to_gpu(col), a.level = to_gpu(std::vector<int>(std::max(local, 1), -1));
  a.frontier = to_gpu(std::vector<int>(std::max(local, 1))), a.next = to_gpu(std::vector<int>(std::max(local, 1)));
  a.next_size = to_gpu(std::vector<int>(1, 0)), a.levels_run = to_gpu(std::vector<int>(1, 0)), a.overflow = to_gpu(std::vector<int>(1, 0));
  a.stale = to_gpu(std::vector<int>(1, 0));
  // Symmetric: the same sizes on every PE.
  a.inbox = static_cast<int*>(nvshmem_calloc(size_t(2) * npes * a.message_ints, sizeof(int)));
  a.outbox = static_cast<int*>(nvshmem_calloc(size_t(npes) * a.message_ints, sizeof(int)));
  a.arrival = static_cast<uint64_t*>(nvshmem_calloc(kMaxLevels, sizeof(uint64_t)));
  auto* all_arrivals = static_cast<uint64_t*>(nvshmem_calloc(size_t(npes) * kMaxLevels, sizeof(uint64_t)));
  if (!a.row || !a.col || !a.level || !a.frontier || !a.next || !a.next_size || !a.levels_run || !a.overflow || !a.stale)
    return std::fprintf(stderr, "bfs_barrier: cudaMalloc failed\n"), 2;
  if (!a.inbox || !a.outbox || !a.arrival || !all_arrivals) return std::fprintf(stderr, "bfs_barrier: nvshmem_calloc failed\n"), 2;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  nvshmem_barrier_all();

  // Collective launch: NVSHMEM makes sure every PE's kernel can be resident at once, which a
  // kernel waiting at device barriers needs.
  void* args[] = {&a};
  if (nvshmemx_collective_launch((const void*)bfs_levels, dim3(1), dim3(kThreads), args, 0, s) != 0)
    return std::fprintf(stderr, "bfs_barrier: PE %d: nvshmemx_collective_launch failed\n", me), 2;
  if (!wait_for_stream("bfs_barrier", me, s, timeout_s, "bfs_levels")) return 2;
  int levels_run = 0, overflow = 0, stale = 0;
  CHECK_CUDA(cudaMemcpy(&levels_run, a.levels_run, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&overflow, a.overflow, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&stale, a.stale, sizeof(int), cudaMemcpyDeviceToHost));
  gather_arrivals<<<1, 1, 0, s>>>(all_arrivals, a.arrival, levels_run, me);
  CHECK_CUDA(cudaGetLastError());
  if (!wait_for_stream("bfs_barrier", me, s, timeout_s, "gather_arrivals")) return 2;
  nvshmem_barrier_all();  // PE 0 holds every PE's arrivals

  std::vector<int> got(std::max(local, 1));
  CHECK_CUDA(cudaMemcpy(got.data(), a.level, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  size_t wrong = 0, reached = 0;
  for (int i = 0; i < local; ++i) wrong += got[i] != ref.level[first + i], reached += got[i] >= 0;
  const bool ok = !wrong && !overflow && !stale && levels_run == ref.levels;
  if (me == 0 && !expected.empty()) {
    std::vector<uint64_t> arrival(size_t(npes) * kMaxLevels);
    CHECK_CUDA(cudaMemcpy(arrival.data(), all_arrivals, arrival.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    if (!write_expected(expected, ref, npes, slow_pe, a.delay_ns, arrival, scale, edge_factor, seed, root, g.col.size() / 2))
      return std::fprintf(stderr, "bfs_barrier: cannot write %s\n", expected.c_str()), 2;
  }
  std::printf("bfs_barrier: PE %d: %d of %d vertices (root %d), %zu reached, %d levels (host: %d), levels: %s\n", me, local, g.vertices, root,
              reached, levels_run, ref.levels, ok ? "PASS" : "FAIL");
  if (wrong || stale) std::fprintf(stderr, "bfs_barrier: PE %d: %zu vertices at the wrong level%s\n", me, wrong, stale ? "; a message of another level" : "");
  std::fflush(stdout);
  nvshmem_free(all_arrivals);
  nvshmem_free(a.arrival);
  nvshmem_free(a.outbox);
  nvshmem_free(a.inbox);
  nvshmem_finalize();
  return ok ? 0 : 1;
}
