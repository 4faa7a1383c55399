// What the doorbell hijack's forwarding costs, and nothing else: one GPU thread rings a doorbell
// (one 8-byte store) into a devx UAR page of softnic's, a CPU thread watching that page's register
// (standing in for the NIC) answers through mapped host memory, and the GPU times the round trip
// with %globaltimer. No WQE, no QP, no emulated transport is involved. Untraced the GPU's store
// reaches the page directly; under `sigmatrace profile --softnic` (doorbells forwarded) it lands in
// the profiler's shadow page and reaches the watched one through the poller: the difference of
// the two runs is the forwarding's latency.
//
//   doorbell_forward_bench [--iters N] [--warmup W] [--burst B] [--nic-delay-us D] [--nic-read BYTES]
//                          [--json FILE]
// --burst B: B doorbells back to back (each a new value), then the wait for the answer to the
// last one (the time per round is reported; B = 1: one doorbell in flight).
// --nic-read BYTES: before it answers, the "NIC" reads BYTES of GPU memory through the CUDA
// driver (an asynchronous copy on a stream of its own, then polling the stream), as softnic's
// engine reads a WQE: a real NIC reads by DMA, an emulated one calls the driver in the traced
// process, where the profiler's pollers call it too. 0 (default): no driver call. How long each
// read took is reported too (median and p99): a read that waits for another thread's driver call
// in the same process shows it there.
// --nic-delay-us D: the "NIC" answers D us after it saw the doorbell (spinning, no driver call),
// as a transport would: a round trip this long leaves the poller idle between doorbells, and so
// asking about kernel markers (with a round trip of 2 us it never is idle long enough to ask).
// Prints one line with the median, p99, mean, min and max round trip in microseconds (and, with
// --nic-read, the median and p99 of the NIC's reads).
#include <cuda_runtime.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mlx5/wqe.hpp"

namespace {

namespace m5 = sigmatrace::mlx5;

#define CHECK(c, what)                                  \
  do {                                                  \
    if (!(c)) {                                         \
      fprintf(stderr, "doorbell_forward_bench: %s\n", what); \
      exit(2);                                          \
    }                                                   \
  } while (0)

// The value a fraction num/den of the way up n sorted values: the median (1/2), the p99 (99/100).
template <class T>
T at_fraction(const T* sorted, size_t n, size_t num, size_t den) {
  return sorted[std::min(n - 1, n * num / den)];
}

constexpr uint32_t kQpn = 0x5e;  // names no QP: softnic's engine ignores it

__device__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void ring_kernel(volatile uint64_t* doorbell, volatile uint64_t* answer, uint64_t* ns, int rounds, int burst,
                            uint64_t deadline_ns) {
  uint64_t seq = 0;
  for (int r = 0; r < rounds; ++r) {
    const uint64_t t0 = globaltimer();
    uint64_t want = 0;
    for (int b = 0; b < burst; ++b) {
      ++seq;
      want = m5::doorbell_value(uint16_t(seq), kQpn) ^ (seq >> 16 << 56);  // a new value every time
      *doorbell = want;
      __threadfence_system();
    }
    while (*answer != want)
      if (globaltimer() - t0 > deadline_ns) {
        ns[r] = ~0ull;  // the host reports the time-out
        return;
      }
    ns[r] = globaltimer() - t0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20000, warmup = 2000, burst = 1, nic_read = 0, nic_delay_us = 0;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) iters = atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = atoi(argv[++i]);
    else if (a == "--burst" && i + 1 < argc) burst = atoi(argv[++i]);
    else if (a == "--nic-read" && i + 1 < argc) nic_read = atoi(argv[++i]);
    else if (a == "--nic-delay-us" && i + 1 < argc) nic_delay_us = atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else {
      fprintf(stderr, "doorbell_forward_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  CHECK(iters > 0 && warmup >= 0 && burst >= 1 && burst <= 64 && nic_read >= 0 && nic_read <= (1 << 20) &&
            nic_delay_us >= 0 && nic_delay_us <= 100000,
        "bad arguments");
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  CHECK(list && n > 0, "no RDMA device (run with softnic's libraries)");
  ibv_context* ctx = ibv_open_device(list[0]);
  CHECK(ctx, "ibv_open_device failed");
  mlx5dv_devx_uar* uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
  CHECK(uar, "mlx5dv_devx_alloc_uar failed");
  CHECK(cudaHostRegister(uar->base_addr, 4096, cudaHostRegisterPortable | cudaHostRegisterMapped) == cudaSuccess,
        "cudaHostRegister of the doorbell page failed");
  uint64_t* dev_page = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_page), uar->base_addr, 0) == cudaSuccess,
        "cudaHostGetDevicePointer failed");
  const size_t reg_off = static_cast<char*>(uar->reg_addr) - static_cast<char*>(uar->base_addr);
  auto* dev_reg = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(dev_page) + reg_off);
  uint64_t* answer = nullptr;
  CHECK(cudaHostAlloc(reinterpret_cast<void**>(&answer), 64, cudaHostAllocMapped) == cudaSuccess, "cudaHostAlloc failed");
  *answer = 0;
  uint64_t* dev_answer = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_answer), answer, 0) == cudaSuccess, "answer mapping failed");
  const int rounds = warmup + iters;
  uint64_t* ns = nullptr;
  CHECK(cudaMallocManaged(&ns, sizeof(uint64_t) * size_t(rounds)) == cudaSuccess, "cudaMallocManaged failed");
  // A round the kernel never reached keeps this value (a run once printed all zeros: no kernel ran).
  constexpr uint64_t kNotRun = ~0ull - 1;
  for (int r = 0; r < rounds; ++r) ns[r] = kNotRun;

  // What the "NIC" reads of GPU memory per doorbell (--nic-read), on a stream of its own.
  void* nic_src = nullptr;
  void* nic_dst = nullptr;
  cudaStream_t nic_stream = nullptr;
  if (nic_read) {
    CHECK(cudaMalloc(&nic_src, size_t(nic_read)) == cudaSuccess, "cudaMalloc of the NIC's source failed");
    CHECK(cudaHostAlloc(&nic_dst, size_t(nic_read), cudaHostAllocDefault) == cudaSuccess, "cudaHostAlloc of the NIC's staging failed");
    CHECK(cudaStreamCreateWithFlags(&nic_stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate (NIC) failed");
  }
  // How long each of the NIC's reads took, from the copy's enqueue to its end (ns). Sized before the
  // run so that the NIC allocates nothing while it serves; a burst's doorbells may be seen as one.
  std::vector<uint64_t> read_ns(nic_read ? size_t(rounds) * size_t(burst) : 0);
  size_t reads_done = 0;
  // The "NIC": answers every new value of the register it watches with that value.
  std::atomic<bool> stop{false};
  std::atomic<int> nic_error{cudaSuccess};  // the NIC's first failed read: said at the end
  std::thread nic([&] {
    auto* reg = reinterpret_cast<volatile uint64_t*>(uar->reg_addr);
    uint64_t last = *reg;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t v = *reg;
      if (v == last) continue;
      last = v;
      if (nic_delay_us) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(nic_delay_us);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
      if (nic_read) {
        const auto read_start = std::chrono::steady_clock::now();
        cudaError_t e = cudaMemcpyAsync(nic_dst, nic_src, size_t(nic_read), cudaMemcpyDeviceToHost, nic_stream);
        while (e == cudaSuccess) {  // until the copy is done (or failed)
          e = cudaStreamQuery(nic_stream);
          if (e == cudaErrorNotReady) e = cudaSuccess;
          else break;
        }
        if (e != cudaSuccess && nic_error.load() == cudaSuccess) nic_error = e;
        if (reads_done < read_ns.size())
          read_ns[reads_done++] = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - read_start).count());
      }
      __atomic_store_n(answer, v, __ATOMIC_RELEASE);
    }
  });
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate failed");
  ring_kernel<<<1, 1, 0, s>>>(dev_reg, dev_answer, ns, rounds, burst, 2000000000ull);
  const cudaError_t launched = cudaGetLastError();
  CHECK(launched == cudaSuccess, cudaGetErrorString(launched));
  CHECK(cudaStreamSynchronize(s) == cudaSuccess, "the kernel failed");
  stop = true;
  nic.join();
  if (nic_error != cudaSuccess) {
    fprintf(stderr, "doorbell_forward_bench: the NIC's read of GPU memory failed: %s\n",
            cudaGetErrorString(static_cast<cudaError_t>(nic_error.load())));
    return 2;
  }
  std::vector<double> us;
  for (int r = warmup; r < rounds; ++r) {
    if (ns[r] == ~0ull) {
      fprintf(stderr, "doorbell_forward_bench: round %d: no answer within 2 s\n", r);
      return 3;
    }
    if (ns[r] == kNotRun) {
      fprintf(stderr, "doorbell_forward_bench: round %d never ran (the kernel did not run to its end)\n", r);
      return 3;
    }
    us.push_back(double(ns[r]) / 1e3);
  }
  std::sort(us.begin(), us.end());
  double mean = 0;
  for (double v : us) mean += v;
  mean /= double(us.size());
  const double median = at_fraction(us.data(), us.size(), 1, 2), p99 = at_fraction(us.data(), us.size(), 99, 100);
  // The NIC's reads, all of them (the warm-up's included: the NIC does not know the rounds).
  std::sort(read_ns.begin(), read_ns.begin() + std::ptrdiff_t(reads_done));
  const double read_median = reads_done ? double(at_fraction(read_ns.data(), reads_done, 1, 2)) / 1e3 : 0,
               read_p99 = reads_done ? double(at_fraction(read_ns.data(), reads_done, 99, 100)) / 1e3 : 0;
  char reads[96] = "";
  if (reads_done) snprintf(reads, sizeof reads, "; NIC read median %.3f us, p99 %.3f us (%zu reads)", read_median, read_p99, reads_done);
  printf("doorbell round trip, burst %d, NIC delay %d us, NIC read %d B: median %.3f us, p99 %.3f us, mean %.3f us, min %.3f, max %.3f (%d rounds)%s\n", burst,
         nic_delay_us, nic_read, median, p99, mean, us.front(), us.back(), iters, reads);
  if (!json.empty()) {
    FILE* f = fopen(json.c_str(), "w");
    CHECK(f, "cannot write the JSON file");
    // doorbells: every one the GPU rang, the warm-up's included (what a trace must hold).
    fprintf(f, "{\"burst\": %d, \"nic_delay_us\": %d, \"nic_read\": %d, \"rounds\": %d, \"doorbells\": %lld, \"median_us\": %.4f, \"p99_us\": %.4f, \"mean_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f",
            burst, nic_delay_us, nic_read, iters, static_cast<long long>(rounds) * burst, median, p99, mean, us.front(), us.back());
    if (reads_done) fprintf(f, ", \"nic_reads\": %zu, \"nic_read_median_us\": %.4f, \"nic_read_p99_us\": %.4f", reads_done, read_median, read_p99);
    fprintf(f, "}\n");
    fclose(f);
  }
  cudaHostUnregister(uar->base_addr);
  mlx5dv_devx_free_uar(uar);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
