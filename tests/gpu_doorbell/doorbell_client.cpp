// A GPU-initiated RDMA client without a GPU, for the doorbell hijack's tests: devx RC QPs over
// softnic with their queues in host memory (testbed/gda/tests/host_endpoint.hpp), the doorbell
// page mapped "into the GPU" with cuMemHostRegister + cuMemHostGetDevicePointer exactly as
// NVSHMEM and NCCL map it, and CPU threads in the GPU threads' place: each builds WQEs and rings
// through the pointer the driver handed out, one doorbell per operation, waiting for its
// completion (Put + Quiet).
//
//   doorbell_client [--resolve link|proc] [--qps N] [--ops K] [--gap-ms M] [--probe] [--plain-page]
//
// --resolve link: the driver functions are called as linked (libcuda's exported symbols);
//   proc: as the CUDA runtime does, through dlopen(libcuda) + dlsym(cuGetProcAddress_v2), then
//   cuGetProcAddress("cuGetProcAddress") and every other function through what that returned.
// --probe: first NCCL's AUTO probe (register, get the pointer, unregister), then the real mapping.
// --plain-page: also registers and maps an ordinary page (which must be left alone).
// --gap-ms: each "GPU thread" rests this long between operations (idle doorbell pages).
// The output names what was done and verified, and nothing that differs between runs.
#include <dlfcn.h>

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
};

extern "C" {
CUresult cuInit(unsigned);
CUresult cuMemHostRegister_v2(void*, size_t, unsigned);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr*, void*, unsigned);
CUresult cuMemHostUnregister(void*);
CUresult cuModuleGetFunction(void**, void*, const char*);
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
CUresult cuGetExportTable(const void**, const void*);
}

Driver linked_driver() {
  return {&cuInit, &cuMemHostRegister_v2, &cuMemHostGetDevicePointer_v2, &cuMemHostUnregister, &cuModuleGetFunction, &cuLaunchKernel,
          &cuGetExportTable};
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

}  // namespace

int main(int argc, char** argv) {
  std::string resolve = "link";
  int qps = 1, ops = 100, gap_ms = 0;
  bool probe = false, plain_page = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--resolve" && i + 1 < argc) resolve = argv[++i];
    else if (a == "--qps" && i + 1 < argc) qps = atoi(argv[++i]);
    else if (a == "--ops" && i + 1 < argc) ops = atoi(argv[++i]);
    else if (a == "--gap-ms" && i + 1 < argc) gap_ms = atoi(argv[++i]);
    else if (a == "--probe") probe = true;
    else if (a == "--plain-page") plain_page = true;
    else {
      fprintf(stderr, "doorbell_client: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (qps < 1 || qps > 8 || ops < 1 || ops > 60000 || gap_ms < 0 || gap_ms > 1000 || (resolve != "link" && resolve != "proc")) {
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
    create_endpoint(a[size_t(i)], true);
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
  for (Endpoint& e : a) e.doorbell = map_doorbell(d, e);
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

  const size_t kBytes = size_t(qps) * size_t(ops) * 8;
  auto* mem = static_cast<uint8_t*>(aligned_alloc(4096, (kBytes + 4095) & ~size_t(4095)));
  memset(mem, 0, kBytes);
  ibv_mr* mr = ibv_reg_mr(pd, mem, kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  HOST_REQUIRE(mr);

  void* kernel = nullptr;
  HOST_REQUIRE(d.module_get_function(&kernel, nullptr, "put_quiet_kernel") == 0);
  HOST_REQUIRE(d.launch(kernel, unsigned(qps), 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) == 0);

  // One "GPU thread" per QP: an inline WRITE of its sequence number, one doorbell, wait for the CQE.
  std::vector<int> failed(size_t(qps), 0);
  std::vector<std::thread> threads;
  for (int q = 0; q < qps; ++q)
    threads.emplace_back([&, q] {
      Endpoint& e = a[size_t(q)];
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
      }
    });
  for (std::thread& t : threads) t.join();
  int bad = 0;
  for (int q = 0; q < qps; ++q) {
    if (failed[size_t(q)]) {
      printf("qp %d: operation %d got no completion\n", q, failed[size_t(q)]);
      ++bad;
      continue;
    }
    bool ok = true;
    for (int k = 0; k < ops; ++k) {
      uint64_t got;
      memcpy(&got, mem + (size_t(q) * size_t(ops) + size_t(k)) * 8, 8);
      ok &= got == ((uint64_t(q) << 32) | uint64_t(k + 1));
    }
    printf("qp %d: %d writes, one doorbell each, %s\n", q, ops, ok ? "verified" : "WRONG DATA");
    bad += !ok;
  }

  for (Endpoint& e : a) HOST_REQUIRE(d.host_unregister(e.uar->base_addr) == 0);
  ibv_dereg_mr(mr);
  for (std::vector<Endpoint>* side : {&a, &b})
    for (Endpoint& e : *side) {
      mlx5dv_devx_obj_destroy(e.qp);
      mlx5dv_devx_obj_destroy(e.cq);
      mlx5dv_devx_free_uar(e.uar);
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
