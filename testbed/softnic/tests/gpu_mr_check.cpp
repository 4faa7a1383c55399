// Loopback RDMA WRITE, READ and FETCH_ADD between two QPs of one process, targeting a memory
// region in GPU memory when the CUDA driver is available (host memory otherwise). Checks that
// softnic detects GPU memory through libcuda's pointer attributes and moves data with it.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(c)                                              \
  do {                                                        \
    if (!(c)) {                                               \
      fprintf(stderr, "CHECK FAILED line %d: %s\n", __LINE__, #c); \
      exit(1);                                                \
    }                                                         \
  } while (0)

namespace {
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuCtxCreate = int (*)(void**, unsigned, int);
using CuMemAlloc = int (*)(unsigned long long*, size_t);
using CuMemcpyHtoD = int (*)(unsigned long long, const void*, size_t);
using CuMemcpyDtoH = int (*)(void*, unsigned long long, size_t);

struct Cuda {
  CuMemcpyHtoD htod = nullptr;
  CuMemcpyDtoH dtoh = nullptr;
  unsigned long long dptr = 0;
};

bool cuda_alloc(Cuda& c, size_t n) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) return false;
  auto init = reinterpret_cast<CuInit>(dlsym(h, "cuInit"));
  auto dev_get = reinterpret_cast<CuDeviceGet>(dlsym(h, "cuDeviceGet"));
  auto ctx_create = reinterpret_cast<CuCtxCreate>(dlsym(h, "cuCtxCreate_v2"));
  auto mem_alloc = reinterpret_cast<CuMemAlloc>(dlsym(h, "cuMemAlloc_v2"));
  c.htod = reinterpret_cast<CuMemcpyHtoD>(dlsym(h, "cuMemcpyHtoD_v2"));
  c.dtoh = reinterpret_cast<CuMemcpyDtoH>(dlsym(h, "cuMemcpyDtoH_v2"));
  if (!init || !dev_get || !ctx_create || !mem_alloc || !c.htod || !c.dtoh) return false;
  int dev = 0;
  void* ctx = nullptr;
  if (init(0) || dev_get(&dev, 0) || ctx_create(&ctx, 0, dev) || mem_alloc(&c.dptr, n)) return false;
  return true;
}

void connect(ibv_qp* qp, uint32_t dest, uint16_t lid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = lid;
  a.ah_attr.port_num = 1;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

void run(ibv_qp* qp, ibv_cq* cq, ibv_wr_opcode op, ibv_sge sge, uint64_t raddr, uint32_t rkey, uint64_t add = 0) {
  ibv_send_wr wr{}, *bad;
  wr.opcode = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = add;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  CHECK(ibv_post_send(qp, &wr, &bad) == 0);
  ibv_wc wc;
  while (ibv_poll_cq(cq, 1, &wc) == 0) {
  }
  if (wc.status) fprintf(stderr, "status %s\n", ibv_wc_status_str(wc.status));
  CHECK(wc.status == IBV_WC_SUCCESS);
}
}  // namespace

int main() {
  constexpr size_t n = 1 << 20;
  Cuda cuda;
  bool gpu = cuda_alloc(cuda, n);
  std::vector<uint8_t> host_target;
  if (!gpu) host_target.resize(n);
  void* target = gpu ? reinterpret_cast<void*>(cuda.dptr) : host_target.data();
  printf("target memory: %s\n", gpu ? "GPU (cuMemAlloc)" : "host (no usable CUDA driver)");

  int num = 0;
  ibv_device** devs = ibv_get_device_list(&num);
  CHECK(devs && num > 0);
  ibv_context* ctx = ibv_open_device(devs[0]);
  CHECK(ctx);
  ibv_port_attr pa;
  CHECK(ibv_query_port(ctx, 1, &pa) == 0);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  std::vector<uint8_t> src(n), back(n);
  for (size_t i = 0; i < n; ++i) src[i] = uint8_t(i * 13 + 5);
  int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* msrc = ibv_reg_mr(pd, src.data(), n, acc);
  ibv_mr* mback = ibv_reg_mr(pd, back.data(), n, acc);
  ibv_mr* mtgt = ibv_reg_mr(pd, target, n, acc);
  CHECK(msrc && mback && mtgt);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  qa.qp_type = IBV_QPT_RC;
  ibv_qp* q1 = ibv_create_qp(pd, &qa);
  ibv_qp* q2 = ibv_create_qp(pd, &qa);
  CHECK(q1 && q2);
  connect(q1, q2->qp_num, pa.lid);
  connect(q2, q1->qp_num, pa.lid);

  // A forked child that exits normally (atexit handlers run) must leave the parent's
  // endpoint alone.
  pid_t child = fork();
  if (child == 0) exit(0);
  int status = 0;
  waitpid(child, &status, 0);

  uint64_t t = reinterpret_cast<uint64_t>(target);
  run(q1, cq, IBV_WR_RDMA_WRITE, ibv_sge{uint64_t(uintptr_t(src.data())), uint32_t(n), msrc->lkey}, t, mtgt->rkey);
  run(q1, cq, IBV_WR_RDMA_READ, ibv_sge{uint64_t(uintptr_t(back.data())), uint32_t(n), mback->lkey}, t, mtgt->rkey);
  CHECK(memcmp(src.data(), back.data(), n) == 0);
  if (gpu) {
    std::vector<uint8_t> check(n);
    CHECK(cuda.dtoh(check.data(), cuda.dptr, n) == 0);
    CHECK(memcmp(src.data(), check.data(), n) == 0);
  }
  uint64_t before;
  memcpy(&before, src.data() + 64, 8);
  run(q1, cq, IBV_WR_ATOMIC_FETCH_AND_ADD, ibv_sge{uint64_t(uintptr_t(back.data())), 8, mback->lkey}, t + 64,
      mtgt->rkey, 5);
  uint64_t old;
  memcpy(&old, back.data(), 8);
  CHECK(old == before);
  run(q1, cq, IBV_WR_RDMA_READ, ibv_sge{uint64_t(uintptr_t(back.data())), 8, mback->lkey}, t + 64, mtgt->rkey);
  uint64_t now;
  memcpy(&now, back.data(), 8);
  CHECK(now == before + 5);
  ibv_destroy_qp(q1);
  ibv_destroy_qp(q2);
  ibv_dereg_mr(mtgt);
  ibv_dereg_mr(mback);
  ibv_dereg_mr(msrc);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(devs);
  printf("loopback write/read/atomic on %s memory passed\n", gpu ? "GPU" : "host");
  return 0;
}
