// A GPU-initiated RDMA client without a GPU, for the doorbell hijack's tests: devx RC QPs over
// softnic with their queues in host memory (testbed/gda/tests/host_endpoint.hpp), the doorbell
// page mapped "into the GPU" with cuMemHostRegister + cuMemHostGetDevicePointer exactly as
// NVSHMEM and NCCL map it, and CPU threads in the GPU threads' place: each builds WQEs and rings
// through the pointer the driver handed out, one doorbell per operation, waiting for its
// completion (Put + Quiet).
//
//   doorbell_client [--resolve link|proc] [--qps N] [--ops K] [--gap-ms M] [--busy-us U] [--probe]
//                   [--plain-page] [--mix] [--burst B] [--halves] [--blueflame] [--no-unregister] [--fork]
//                   [--shared-uar [--lost-doorbells K]] [--second-bfreg] [--end-context destroy|reset]
//                   [--marked] [--hang-s S]
//
// --resolve link: the driver functions are called as linked (libcuda's exported symbols);
//   proc: as the CUDA runtime does, through dlopen(libcuda) + dlsym(cuGetProcAddress_v2), then
//   cuGetProcAddress("cuGetProcAddress") and every other function through what that returned.
// --probe: first NCCL's AUTO probe (register, get the pointer, unregister), then the real mapping.
// --plain-page: also registers and maps an ordinary page (which must be left alone).
// --gap-ms: each "GPU thread" rests this long between operations (idle doorbell pages).
// --busy-us: each "GPU thread" computes (spins) this long between operations, as a kernel does
//   between its puts: the poller stays awake between doorbells.
// --marked: the kernel is launched on an explicit stream, so the profiler marks its end, and it
//   ends once every operation completed (the stand-in driver's fake_cuda_kernel_done).
// --hang-s: --marked, and the kernel runs on this long after its last doorbell, ringing nothing.
// --mix: after one NOP, operation k is, by k % 6: an 8-byte inline WRITE to slot k, an 8-byte
//   WRITE of src[k] to slot k from a data segment, an 8-byte READ of src[k] into dst[k], a
//   FETCH_ADD of k + 1 to the QP's counter, a COMPARE_SWAP of the QP's swap word (expected
//   value -> k + 1), a 100-byte inline WRITE to big[k] (3 WQEBBs). The NOP shifts the 8-WQEBB
//   cycle so that the big WRITEs sometimes wrap around the 64-WQEBB ring.
// --burst B: B operations per doorbell, the last one signalled (K must be a multiple of B).
// --halves: doorbells alternate between the register and its twin (reg ^ 0x100), as libmlx5's.
// --blueflame: each doorbell is a BlueFlame write: the last WQE's first 64 bytes, its control
//   segment naming that WQE's own index (libmlx5's convention), the header stored last.
// --no-unregister: exits without unregistering the doorbell pages or destroying anything (as a
//   program that skips its teardown does).
// --fork: after mapping the doorbells, forks a child that exits at once through exit() (its
//   atexit handlers run), while the parent goes on.
// --shared-uar: every QP is created on the first QP's UAR page and rings its register, all at
//   once (one register, several QPs: rdma-core's shared UAR, NCCL's QP groups).
// --lost-doorbells K: first, K times, QP 0 posts a NOP and only updates its doorbell record (its
//   store lost to QP 1's, which rings its own NOP right after), and both NOPs must complete.
// --end-context: after the operations, with the pages still mapped, ends the CUDA context
//   (cuCtxDestroy of the current one, or cuDevicePrimaryCtxReset of device 0, as cudaDeviceReset).
// --second-bfreg: doorbells go to the page's second BlueFlame register (0xa00), not reg_addr.
// The output names what was done and verified, and nothing that differs between runs.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "host_endpoint.hpp"

using namespace gda_host;

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*host_register)(void*, size_t, unsigned);
  CUresult (*get_device_pointer)(CUdeviceptr*, void*, unsigned);
  CUresult (*host_unregister)(void*);
  CUresult (*module_get_function)(void**, void*, const char*);
  CUresult (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  CUresult (*export_table)(const void**, const void*);
  CUresult (*ctx_get_current)(void**);
  CUresult (*ctx_destroy)(void*);
  CUresult (*primary_reset)(int);
};

extern "C" {
CUresult cuInit(unsigned);
CUresult cuMemHostRegister_v2(void*, size_t, unsigned);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr*, void*, unsigned);
CUresult cuMemHostUnregister(void*);
CUresult cuModuleGetFunction(void**, void*, const char*);
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
CUresult cuGetExportTable(const void**, const void*);
CUresult cuCtxGetCurrent(void**);
CUresult cuCtxDestroy_v2(void*);
CUresult cuDevicePrimaryCtxReset_v2(int);
CUresult cuStreamCreate(void**, unsigned);
void fake_cuda_kernel_done(void*);  // the test's stand-in driver: the kernel on the stream has ended
}

Driver linked_driver() {
  return {&cuInit, &cuMemHostRegister_v2, &cuMemHostGetDevicePointer_v2, &cuMemHostUnregister, &cuModuleGetFunction, &cuLaunchKernel,
          &cuGetExportTable, &cuCtxGetCurrent, &cuCtxDestroy_v2, &cuDevicePrimaryCtxReset_v2};
}

Driver resolved_driver() {
  using GetProc = CUresult (*)(const char*, void**, int, uint64_t, int*);
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  HOST_REQUIRE(h);
  auto first = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
  HOST_REQUIRE(first);
  GetProc gpa = nullptr;
  int status = 0;
  HOST_REQUIRE(first("cuGetProcAddress", reinterpret_cast<void**>(&gpa), 12000, 0, &status) == 0 && gpa);
  Driver d{};
  auto get = [&](const char* name, int version, uint64_t flags, auto* fn) {
    HOST_REQUIRE(gpa(name, reinterpret_cast<void**>(fn), version, flags, &status) == 0 && *fn);
  };
  get("cuInit", 2000, 0, &d.init);
  get("cuMemHostRegister", 6050, 0, &d.host_register);
  get("cuMemHostGetDevicePointer", 3020, 0, &d.get_device_pointer);
  get("cuMemHostUnregister", 4000, 0, &d.host_unregister);
  get("cuModuleGetFunction", 2000, 0, &d.module_get_function);
  get("cuLaunchKernel", 7000, 2, &d.launch);  // the per-thread default stream variant
  get("cuGetExportTable", 3000, 0, &d.export_table);
  get("cuCtxGetCurrent", 4000, 0, &d.ctx_get_current);
  get("cuCtxDestroy", 4000, 0, &d.ctx_destroy);
  get("cuDevicePrimaryCtxReset", 7000, 0, &d.primary_reset);  // as the CUDA runtime asks for it
  // An old-ABI lookup: the driver's legacy function, which nothing may wrap.
  void* legacy = nullptr;
  HOST_REQUIRE(gpa("cuMemHostGetDevicePointer", &legacy, 2020, 0, &status) == 0 && legacy);
  return d;
}

constexpr unsigned kPortable = 1, kDeviceMap = 2;

// Maps the endpoint's doorbell register for "GPU" threads; returns the pointer they ring.
uint64_t* map_doorbell(const Driver& d, Endpoint& e) {
  void* page = e.uar->base_addr;
  HOST_REQUIRE(d.host_register(page, 4096, kPortable | kDeviceMap) == 0);
  CUdeviceptr dev = 0;
  HOST_REQUIRE(d.get_device_pointer(&dev, page, 0) == 0 && dev);
  return reinterpret_cast<uint64_t*>(dev + (static_cast<char*>(e.uar->reg_addr) - static_cast<char*>(page)));
}

// --mix: one QP's memory (all in the one MR): slots, src, dst and big per operation, then the
// counter and the swap word.
struct MixBlock {
  uint8_t* base;
  int ops;
  static size_t bytes(int ops) { return size_t(ops) * 128 + 16; }
  uint8_t* slot(int k) const { return base + size_t(k) * 8; }
  uint8_t* src(int k) const { return base + size_t(ops) * 8 + size_t(k) * 8; }
  uint8_t* dst(int k) const { return base + size_t(ops) * 16 + size_t(k) * 8; }
  uint8_t* big(int k) const { return base + size_t(ops) * 24 + size_t(k) * 104; }
  uint8_t* counter() const { return base + size_t(ops) * 128; }
  uint8_t* swap_word() const { return counter() + 8; }
};
uint64_t addr_of(const void* p) { return reinterpret_cast<uint64_t>(p); }
uint64_t src_value(int q, int k) { return 0x5a00000000000000ull | (uint64_t(q) << 32) | uint64_t(k); }
void big_pattern(int q, int k, uint8_t* out) {
  for (int i = 0; i < 100; ++i) out[i] = uint8_t(q * 31 + k * 7 + i);
}

// Posts operation k of --mix; returns its WQE index.
uint16_t post_mix(Endpoint& e, const MixBlock& b, ibv_mr* mr, int q, int k, bool signal) {
  uint64_t v = (uint64_t(q) << 32) | uint64_t(k + 1);
  uint8_t pattern[100];
  switch (k % 6) {
    case 0: return post_write_inline(e, &v, 8, addr_of(b.slot(k)), mr->rkey, signal);
    case 1: return post_rdma(e, m5::kOpRdmaWrite, addr_of(b.src(k)), mr->lkey, 8, addr_of(b.slot(k)), mr->rkey, signal);
    case 2: return post_rdma(e, m5::kOpRdmaRead, addr_of(b.dst(k)), mr->lkey, 8, addr_of(b.src(k)), mr->rkey, signal);
    case 3: return post_atomic(e, m5::kOpAtomicFa, uint64_t(k + 1), 0, addr_of(b.dst(k)), mr->lkey, addr_of(b.counter()), mr->rkey);
    case 4: return post_atomic(e, m5::kOpAtomicCs, uint64_t(k + 1), uint64_t(k > 4 ? k - 5 : 0), addr_of(b.dst(k)), mr->lkey,
                               addr_of(b.swap_word()), mr->rkey);
    default:
      big_pattern(q, k, pattern);
      return post_write_inline(e, pattern, 100, addr_of(b.big(k)), mr->rkey, signal);
  }
}

// What --mix must have left in memory.
bool verify_mix(const MixBlock& b, int q) {
  bool ok = true;
  uint64_t sum = 0, swap = 0;
  for (int k = 0; k < b.ops; ++k) {
    uint64_t got = 0;
    uint8_t pattern[100];
    switch (k % 6) {
      case 0: memcpy(&got, b.slot(k), 8); ok &= got == ((uint64_t(q) << 32) | uint64_t(k + 1)); break;
      case 1: memcpy(&got, b.slot(k), 8); ok &= got == src_value(q, k); break;
      case 2: memcpy(&got, b.dst(k), 8); ok &= got == src_value(q, k); break;
      case 3: memcpy(&got, b.dst(k), 8); ok &= got == sum; sum += uint64_t(k + 1); break;
      case 4: memcpy(&got, b.dst(k), 8); ok &= got == swap; swap = uint64_t(k + 1); break;
      default: big_pattern(q, k, pattern); ok &= memcmp(b.big(k), pattern, 100) == 0; break;
    }
  }
  uint64_t counter = 0, word = 0;
  memcpy(&counter, b.counter(), 8);
  memcpy(&word, b.swap_word(), 8);
  return ok && counter == sum && word == swap;
}

}  // namespace

int main(int argc, char** argv) {
  std::string resolve = "link";
  int qps = 1, ops = 100, gap_ms = 0, busy_us = 0;
  int hang_s = 0;  // the "kernel" runs on this long after its last doorbell, ringing nothing (a hang)
  bool marked = false;
  bool probe = false, plain_page = false, mix = false, halves = false, blueflame = false, no_unregister = false, fork_child = false;
  bool shared_uar = false, second_bfreg = false;
  int lost_doorbells = 0;
  std::string end_context;
  int burst = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--resolve" && i + 1 < argc) resolve = argv[++i];
    else if (a == "--qps" && i + 1 < argc) qps = atoi(argv[++i]);
    else if (a == "--ops" && i + 1 < argc) ops = atoi(argv[++i]);
    else if (a == "--gap-ms" && i + 1 < argc) gap_ms = atoi(argv[++i]);
    else if (a == "--busy-us" && i + 1 < argc) busy_us = atoi(argv[++i]);
    else if (a == "--marked") marked = true;
    else if (a == "--hang-s" && i + 1 < argc) hang_s = atoi(argv[++i]), marked = true;
    else if (a == "--probe") probe = true;
    else if (a == "--plain-page") plain_page = true;
    else if (a == "--mix") mix = true;
    else if (a == "--burst" && i + 1 < argc) burst = atoi(argv[++i]);
    else if (a == "--halves") halves = true;
    else if (a == "--blueflame") blueflame = true;
    else if (a == "--no-unregister") no_unregister = true;
    else if (a == "--fork") fork_child = true;
    else if (a == "--shared-uar") shared_uar = true;
    else if (a == "--second-bfreg") second_bfreg = true;
    else if (a == "--lost-doorbells" && i + 1 < argc) lost_doorbells = atoi(argv[++i]);
    else if (a == "--end-context" && i + 1 < argc) end_context = argv[++i];
    else {
      fprintf(stderr, "doorbell_client: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (qps < 1 || qps > 8 || ops < 1 || ops > 60000 || gap_ms < 0 || gap_ms > 1000 || (resolve != "link" && resolve != "proc") ||
      burst < 1 || burst > 16 || ops % burst || hang_s < 0 || hang_s > 60 || lost_doorbells < 0 || lost_doorbells > 1000 ||
      (lost_doorbells && (!shared_uar || qps < 2)) || (!end_context.empty() && end_context != "destroy" && end_context != "reset")) {
    fprintf(stderr, "doorbell_client: bad arguments\n");
    return 2;
  }
  const Driver d = resolve == "link" ? linked_driver() : resolved_driver();
  HOST_REQUIRE(d.init(0) == 0);
  const void* table = nullptr;
  const unsigned char uuid[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
  HOST_REQUIRE(d.export_table(&table, uuid) == 0);

  ibv_device** list = nullptr;
  ibv_pd* pd = open_host_device(&list);

  // QP pairs in loopback: a[i] sends, b[i] is its peer.
  std::vector<Endpoint> a(static_cast<size_t>(qps)), b(static_cast<size_t>(qps));
  for (int i = 0; i < qps; ++i) {
    create_endpoint(a[size_t(i)], true, prm::kQpStRc, shared_uar && i > 0 ? a[0].uar : nullptr);
    create_endpoint(b[size_t(i)], true);
    for (Endpoint* e : {&a[size_t(i)], &b[size_t(i)]}) modify(*e, prm::kRst2Init, 0);
    modify(a[size_t(i)], prm::kInit2Rtr, b[size_t(i)].qpn);
    modify(b[size_t(i)], prm::kInit2Rtr, a[size_t(i)].qpn);
    for (Endpoint* e : {&a[size_t(i)], &b[size_t(i)]}) modify(*e, prm::kRtr2Rts, 0);
  }
  if (probe) {  // NCCL GDAKI's AUTO handler: can the GPU map the doorbell at all?
    void* page = a[0].uar->base_addr;
    HOST_REQUIRE(d.host_register(page, 4096, kPortable | kDeviceMap) == 0);
    CUdeviceptr dev = 0;
    HOST_REQUIRE(d.get_device_pointer(&dev, page, 0) == 0);
    HOST_REQUIRE(d.host_unregister(page) == 0);
    printf("probe: the doorbell page can be mapped\n");
  }
  for (Endpoint& e : a) {
    e.doorbell = e.shares_uar ? a[0].doorbell : map_doorbell(d, e);
    if (second_bfreg && !e.shares_uar) e.doorbell += 0x200 / sizeof(uint64_t);
    e.alternate_halves = halves;
    e.blueflame = blueflame;
  }
  if (fork_child) {
    pid_t child = fork();
    HOST_REQUIRE(child >= 0);
    if (child == 0) exit(0);  // the inherited atexit handlers run in the child
    int status = 0;
    HOST_REQUIRE(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("fork: the child exited\n");
  }
  std::vector<uint8_t> plain;
  if (plain_page) {
    void* p = aligned_alloc(4096, 4096);
    HOST_REQUIRE(p && d.host_register(p, 4096, kPortable | kDeviceMap) == 0);
    CUdeviceptr dev = 0;
    HOST_REQUIRE(d.get_device_pointer(&dev, p, 0) == 0 && dev == reinterpret_cast<uintptr_t>(p));
    HOST_REQUIRE(d.host_unregister(p) == 0);
    free(p);
    printf("plain page: mapped at its own address\n");
  }

  const size_t kPerQp = mix ? MixBlock::bytes(ops) : size_t(ops) * 8;
  const size_t kBytes = size_t(qps) * kPerQp;
  auto* mem = static_cast<uint8_t*>(aligned_alloc(4096, (kBytes + 4095) & ~size_t(4095)));
  memset(mem, 0, kBytes);
  ibv_mr* mr = ibv_reg_mr(pd, mem, kBytes,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  HOST_REQUIRE(mr);
  std::vector<MixBlock> blocks;
  for (int q = 0; q < qps && mix; ++q) {
    blocks.push_back(MixBlock{mem + size_t(q) * kPerQp, ops});
    for (int k = 0; k < ops; ++k) {
      uint64_t v = src_value(q, k);
      memcpy(blocks.back().src(k), &v, 8);
    }
  }

  void* kernel = nullptr;
  HOST_REQUIRE(d.module_get_function(&kernel, nullptr, "put_quiet_kernel") == 0);
  // With --marked the kernel goes on an explicit stream, where the profiler learns when it ends.
  void* stream = nullptr;
  if (marked) HOST_REQUIRE(cuStreamCreate(&stream, 1) == 0 && stream);
  HOST_REQUIRE(d.launch(kernel, unsigned(qps), 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr) == 0);

  for (int k = 0; k < lost_doorbells; ++k) {
    const uint16_t lost = post_nop(a[0], true);
    update_record_only(a[0]);
    const uint16_t rung = post_nop(a[1], true);
    ring(a[1]);
    HOST_REQUIRE(wait_collapsed(a[1], rung).ok && wait_collapsed(a[0], lost).ok);
  }
  if (lost_doorbells) printf("lost doorbells: %d, each completed from its doorbell record\n", lost_doorbells);

  // One "GPU thread" per QP: an inline WRITE of its sequence number, one doorbell, wait for the CQE.
  std::vector<int> failed(size_t(qps), 0);
  std::vector<std::thread> threads;
  for (int q = 0; q < qps; ++q)
    threads.emplace_back([&, q] {
      Endpoint& e = a[size_t(q)];
      if (mix) {
        uint16_t idx = post_nop(e, true);
        ring(e);
        if (!wait_collapsed(e, idx).ok) {
          failed[size_t(q)] = -1;
          return;
        }
        for (int k = 0; k < ops; k += burst) {
          for (int j = 0; j < burst; ++j) idx = post_mix(e, blocks[size_t(q)], mr, q, k + j, j == burst - 1);
          ring(e);
          if (!wait_collapsed(e, idx).ok) {
            failed[size_t(q)] = k + 1;
            return;
          }
        }
        return;
      }
      for (int k = 0; k < ops; ++k) {
        uint64_t v = (uint64_t(q) << 32) | uint64_t(k + 1);
        uint64_t raddr = reinterpret_cast<uint64_t>(mem) + (uint64_t(q) * uint64_t(ops) + uint64_t(k)) * 8;
        uint16_t idx = post_write_inline(e, &v, 8, raddr, mr->rkey, true);
        ring(e);
        if (!wait_collapsed(e, idx).ok) {
          failed[size_t(q)] = k + 1;
          return;
        }
        if (gap_ms) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
        if (busy_us) {
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(busy_us);
          while (std::chrono::steady_clock::now() < until) {
          }
        }
      }
    });
  for (std::thread& t : threads) t.join();
  if (hang_s) {  // the kernel "waits" on, for a put nobody makes, then gives up
    std::this_thread::sleep_for(std::chrono::seconds(hang_s));
    printf("kernel: waited %d s after its last doorbell\n", hang_s);
  }
  if (marked) fake_cuda_kernel_done(stream);
  int bad = 0;
  for (int q = 0; q < qps; ++q) {
    if (failed[size_t(q)]) {
      printf("qp %d: operation %d got no completion\n", q, failed[size_t(q)]);
      ++bad;
      continue;
    }
    bool ok = true;
    if (mix) {
      ok = verify_mix(blocks[size_t(q)], q);
      printf("qp %d: a NOP and %d mixed operations, %d per doorbell, %s\n", q, ops, burst, ok ? "verified" : "WRONG DATA");
      bad += !ok;
      continue;
    }
    for (int k = 0; k < ops; ++k) {
      uint64_t got;
      memcpy(&got, mem + (size_t(q) * size_t(ops) + size_t(k)) * 8, 8);
      ok &= got == ((uint64_t(q) << 32) | uint64_t(k + 1));
    }
    printf("qp %d: %d writes, one doorbell each, %s\n", q, ops, ok ? "verified" : "WRONG DATA");
    bad += !ok;
  }

  if (end_context == "destroy") {
    void* ctx = nullptr;
    HOST_REQUIRE(d.ctx_get_current(&ctx) == 0 && d.ctx_destroy(ctx) == 0);
    printf("context: destroyed\n");
  } else if (end_context == "reset") {
    HOST_REQUIRE(d.primary_reset(0) == 0);
    printf("context: the primary context reset\n");
  }

  if (no_unregister) {  // the pages stay mapped, every object alive: exit() has to cope
    if (bad || g_failures) return 1;
    printf("all operations verified\n");
    return 0;
  }
  for (Endpoint& e : a)
    if (!e.shares_uar) HOST_REQUIRE(d.host_unregister(e.uar->base_addr) == 0);
  ibv_dereg_mr(mr);
  for (std::vector<Endpoint>* side : {&a, &b})  // QPs first: a UAR page may be shared
    for (Endpoint& e : *side) mlx5dv_devx_obj_destroy(e.qp);
  for (std::vector<Endpoint>* side : {&a, &b})
    for (Endpoint& e : *side) {
      mlx5dv_devx_obj_destroy(e.cq);
      if (!e.shares_uar) mlx5dv_devx_free_uar(e.uar);
      mlx5dv_devx_free_uar(e.cq_uar);
      mlx5dv_devx_umem_dereg(e.umem);
    }
  ibv_dealloc_pd(pd);
  ibv_close_device(g_ctx);
  ibv_free_device_list(list);
  if (bad || g_failures) return 1;
  printf("all operations verified\n");
  return 0;
}
