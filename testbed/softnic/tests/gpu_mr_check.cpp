// Loopback RDMA WRITE, READ and FETCH_ADD between two QPs of one process, into a memory region in
// host memory, and in GPU memory where a CUDA driver and a GPU are present (skipped otherwise):
// softnic detects GPU memory through libcuda's pointer attributes and moves data with it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuCtxCreate = int (*)(void**, unsigned, int);
using CuMemAlloc = int (*)(unsigned long long*, size_t);
using CuMemcpyDtoH = int (*)(void*, unsigned long long, size_t);

struct Cuda {
  CuMemcpyDtoH dtoh = nullptr;
  unsigned long long dptr = 0;
};

// GPU memory through the driver API, loaded at run time (softnic itself links no CUDA); the
// reason in *why when there is none.
bool cuda_alloc(Cuda& c, size_t n, std::string* why) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) {
    *why = std::string("no CUDA driver: ") + dlerror();
    return false;
  }
  auto init = reinterpret_cast<CuInit>(dlsym(h, "cuInit"));
  auto dev_get = reinterpret_cast<CuDeviceGet>(dlsym(h, "cuDeviceGet"));
  auto ctx_create = reinterpret_cast<CuCtxCreate>(dlsym(h, "cuCtxCreate_v2"));
  auto mem_alloc = reinterpret_cast<CuMemAlloc>(dlsym(h, "cuMemAlloc_v2"));
  c.dtoh = reinterpret_cast<CuMemcpyDtoH>(dlsym(h, "cuMemcpyDtoH_v2"));
  if (!init || !dev_get || !ctx_create || !mem_alloc || !c.dtoh) {
    *why = "libcuda.so.1 lacks the driver calls this test uses";
    return false;
  }
  int dev = 0;
  void* ctx = nullptr;
  if (int rc = init(0)) {
    *why = "cuInit failed with CUDA error " + std::to_string(rc) + " (no GPU?)";
    return false;
  }
  if (dev_get(&dev, 0) || ctx_create(&ctx, 0, dev) || mem_alloc(&c.dptr, n)) {
    *why = "no GPU memory could be allocated";
    return false;
  }
  return true;
}

void connect(ibv_qp* qp, uint32_t dest, uint16_t lid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = lid;
  a.ah_attr.port_num = 1;
  ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  ASSERT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                      IBV_QP_MAX_QP_RD_ATOMIC),
            0);
}

// Posts one signalled WR and waits for its completion, which must succeed.
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
  ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  ibv_wc wc;
  while (ibv_poll_cq(cq, 1, &wc) == 0) {
  }
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
}

constexpr size_t kBytes = 1 << 20;

// WRITE 1 MiB into `target`, READ it back, FETCH_ADD 5 on a word of it and READ that word back;
// `target_bytes` returns the target's contents as the CPU sees them.
template <typename TargetBytes>
void loopback_into(void* target, TargetBytes target_bytes) {
  int num = 0;
  ibv_device** devs = ibv_get_device_list(&num);
  ASSERT_TRUE(devs && num > 0) << "no device: is softnic's libibverbs loaded?";
  ibv_context* ctx = ibv_open_device(devs[0]);
  ASSERT_NE(ctx, nullptr);
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(ctx, 1, &pa), 0);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  std::vector<uint8_t> src(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; ++i) src[i] = uint8_t(i * 13 + 5);
  int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* msrc = ibv_reg_mr(pd, src.data(), kBytes, acc);
  ibv_mr* mback = ibv_reg_mr(pd, back.data(), kBytes, acc);
  ibv_mr* mtgt = ibv_reg_mr(pd, target, kBytes, acc);
  ASSERT_TRUE(msrc && mback && mtgt);
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  qa.qp_type = IBV_QPT_RC;
  ibv_qp* q1 = ibv_create_qp(pd, &qa);
  ibv_qp* q2 = ibv_create_qp(pd, &qa);
  ASSERT_TRUE(q1 && q2);
  connect(q1, q2->qp_num, pa.lid);
  connect(q2, q1->qp_num, pa.lid);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());

  // A forked child that exits normally (atexit handlers run) must leave the parent's endpoint alone.
  fflush(nullptr);
  pid_t child = fork();
  if (child == 0) exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);

  uint64_t t = reinterpret_cast<uint64_t>(target);
  run(q1, cq, IBV_WR_RDMA_WRITE, ibv_sge{uint64_t(uintptr_t(src.data())), uint32_t(kBytes), msrc->lkey}, t, mtgt->rkey);
  run(q1, cq, IBV_WR_RDMA_READ, ibv_sge{uint64_t(uintptr_t(back.data())), uint32_t(kBytes), mback->lkey}, t, mtgt->rkey);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  EXPECT_EQ(memcmp(src.data(), back.data(), kBytes), 0) << "read back through the NIC";
  EXPECT_EQ(target_bytes(), std::vector<uint8_t>(src)) << "the target as the CPU sees it";
  uint64_t before;
  memcpy(&before, src.data() + 64, 8);
  run(q1, cq, IBV_WR_ATOMIC_FETCH_AND_ADD, ibv_sge{uint64_t(uintptr_t(back.data())), 8, mback->lkey}, t + 64, mtgt->rkey, 5);
  uint64_t old;
  memcpy(&old, back.data(), 8);
  EXPECT_EQ(old, before);
  run(q1, cq, IBV_WR_RDMA_READ, ibv_sge{uint64_t(uintptr_t(back.data())), 8, mback->lkey}, t + 64, mtgt->rkey);
  uint64_t now;
  memcpy(&now, back.data(), 8);
  EXPECT_EQ(now, before + 5);
  EXPECT_EQ(ibv_destroy_qp(q1), 0);
  EXPECT_EQ(ibv_destroy_qp(q2), 0);
  EXPECT_EQ(ibv_dereg_mr(mtgt), 0);
  EXPECT_EQ(ibv_dereg_mr(mback), 0);
  EXPECT_EQ(ibv_dereg_mr(msrc), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  ibv_free_device_list(devs);
}

}  // namespace

TEST(SoftnicMemory, LoopbackWriteReadAndFetchAddMoveTheBytesOfHostMemory) {
  std::vector<uint8_t> target(kBytes);
  loopback_into(target.data(), [&] { return target; });
}

TEST(SoftnicMemory, LoopbackWriteReadAndFetchAddMoveTheBytesOfGpuMemory) {
  Cuda cuda;
  std::string why;
  if (!cuda_alloc(cuda, kBytes, &why)) GTEST_SKIP() << why;
  loopback_into(reinterpret_cast<void*>(cuda.dptr), [&] {
    std::vector<uint8_t> bytes(kBytes);
    EXPECT_EQ(cuda.dtoh(bytes.data(), cuda.dptr, kBytes), 0);
    return bytes;
  });
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // A fabric of this run's own unless the caller chose one: ctest runs other softnic tests at once.
  setenv("SOFTNIC_FABRIC", ("gpu-mr-" + std::to_string(getpid())).c_str(), /*overwrite=*/0);
  return RUN_ALL_TESTS();
}
