// A small verbs program whose own counters the ibverbs provider's records are checked against:
// two RC QPs of one device connected to each other; RDMA writes through ibv_post_send (context ops)
// and through the ibv_wr_* API (ibv_qp_ex), sends with posted receives, and one RDMA write with a
// wrong rkey that must complete with IBV_WC_REM_ACCESS_ERR. It prints its counters on stdout.
//
// Built twice: linked against libibverbs (ordinary dynamic linking), and without it
// (VERBS_PROBE_DLOPEN), resolving every verbs function with dlopen("libibverbs.so.1") + dlsym, or
// dlvsym(..., "IBVERBS_1.1") with --dlvsym, as NVSHMEM and NCCL do.
#include <dlfcn.h>
#include <infiniband/verbs.h>
#ifndef VERBS_PROBE_DLOPEN
#include <infiniband/mlx5dv.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "probe_ranges.h"

namespace {

struct Api {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  ibv_qp_ex* (*qp_to_qp_ex)(ibv_qp*);
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "verbs_probe: %s failed (errno %d)\n", what, errno);
  std::exit(1);
}
#define CHECK(c) \
  if (!(c)) fail(#c)

Api load_api(bool use_dlvsym) {
  Api a{};
#ifdef VERBS_PROBE_DLOPEN
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) fail("dlopen(libibverbs.so.1)");
  auto get = [&](const char* name, const char* version) {
    void* p = use_dlvsym ? dlvsym(h, name, version) : dlsym(h, name);
    if (!p) fail(name);
    return p;
  };
#define PROBE_LOAD(field, name, version) a.field = reinterpret_cast<decltype(a.field)>(get(#name, version))
#else
  (void)use_dlvsym;
#define PROBE_LOAD(field, name, version) a.field = reinterpret_cast<decltype(a.field)>(&::name)
#endif
  PROBE_LOAD(get_device_list, ibv_get_device_list, "IBVERBS_1.1");
  PROBE_LOAD(free_device_list, ibv_free_device_list, "IBVERBS_1.1");
  PROBE_LOAD(open_device, ibv_open_device, "IBVERBS_1.1");
  PROBE_LOAD(close_device, ibv_close_device, "IBVERBS_1.1");
  PROBE_LOAD(query_port, ibv_query_port, "IBVERBS_1.1");
  PROBE_LOAD(alloc_pd, ibv_alloc_pd, "IBVERBS_1.1");
  PROBE_LOAD(dealloc_pd, ibv_dealloc_pd, "IBVERBS_1.1");
  PROBE_LOAD(reg_mr, ibv_reg_mr, "IBVERBS_1.1");
  PROBE_LOAD(dereg_mr, ibv_dereg_mr, "IBVERBS_1.1");
  PROBE_LOAD(create_cq, ibv_create_cq, "IBVERBS_1.1");
  PROBE_LOAD(destroy_cq, ibv_destroy_cq, "IBVERBS_1.1");
  PROBE_LOAD(create_qp, ibv_create_qp, "IBVERBS_1.1");
  PROBE_LOAD(modify_qp, ibv_modify_qp, "IBVERBS_1.1");
  PROBE_LOAD(destroy_qp, ibv_destroy_qp, "IBVERBS_1.1");
  PROBE_LOAD(qp_to_qp_ex, ibv_qp_to_qp_ex, "IBVERBS_1.6");
  return a;
}

struct Counters {
  unsigned long send_wrs = 0, send_bytes = 0, recv_wrs = 0, completions = 0, error_completions = 0;
};

ibv_wc wait_one(ibv_cq* cq, Counters& c) {
  ibv_wc wc{};
  int n;
  while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
  }
  CHECK(n == 1);
  ++c.completions;
  if (wc.status != IBV_WC_SUCCESS) ++c.error_completions;
  return wc;
}

void connect(const Api& api, ibv_qp* qp, uint32_t remote_qpn, uint16_t lid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
  CHECK(api.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote_qpn;
  a.rq_psn = 100;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = lid;
  a.ah_attr.port_num = 1;
  CHECK(api.modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                          IBV_QP_MIN_RNR_TIMER) == 0);
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 100;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  CHECK(api.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC) == 0);
}

}  // namespace

int main(int argc, char** argv) {
  bool use_dlvsym = false;
  int writes = 100, sends = 20;
  long only_ranges = -1, range_gap_ns = 0;
  bool time_ranges = false;
  unsigned size = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dlvsym")) use_dlvsym = true;
    else if (!std::strcmp(argv[i], "--writes") && i + 1 < argc) writes = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--size") && i + 1 < argc) size = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--only-ranges") && i + 1 < argc) only_ranges = std::atol(argv[++i]);  // verbs_probe_nvtx
    else if (!std::strcmp(argv[i], "--range-gap-ns") && i + 1 < argc) range_gap_ns = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--time-ranges")) time_ranges = true;  // bench/nvtx: ns per range
  }
  if (only_ranges >= 0) {
    timespec t0{}, t1{};
    if (time_ranges) probe_ranges::many(only_ranges, range_gap_ns);  // untimed: the first touch of the trace buffer
    clock_gettime(CLOCK_MONOTONIC, &t0);
    probe_ranges::many(only_ranges, range_gap_ns);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    std::printf("ranges=%ld\n", only_ranges);
    if (time_ranges && only_ranges > 0)
      std::printf("ns_per_range=%.2f\n", (double(t1.tv_sec - t0.tv_sec) * 1e9 + double(t1.tv_nsec - t0.tv_nsec)) / double(only_ranges));
    return 0;
  }
  Api api = load_api(use_dlvsym);
  Counters c;
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  CHECK(list && n >= 1);
  ibv_context* ctx = api.open_device(list[0]);
  CHECK(ctx);
  api.free_device_list(list);
  ibv_port_attr pa{};
  CHECK(api.query_port(ctx, 1, &pa) == 0);
  ibv_pd* pd = api.alloc_pd(ctx);
  CHECK(pd);
  constexpr size_t kBuf = 1 << 20;
  auto* buf = static_cast<char*>(aligned_alloc(4096, kBuf));
  std::memset(buf, 1, kBuf);
  ibv_mr* mr = api.reg_mr(pd, buf, kBuf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  CHECK(mr);
  ibv_cq* cq = api.create_cq(ctx, 1024, nullptr, nullptr, 0);
  CHECK(cq);

  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 128;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  ibv_qp* qa = api.create_qp(pd, &ia);  // classic: ibv_post_send through context ops
  CHECK(qa);
  ibv_qp_init_attr_ex ix{};
  ix.send_cq = ix.recv_cq = cq;
  ix.cap = ia.cap;
  ix.qp_type = IBV_QPT_RC;
  ix.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ix.pd = pd;
  ix.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
  verbs_context* vctx = verbs_get_ctx_op(ctx, create_qp_ex);  // what the inline ibv_create_qp_ex() does
  CHECK(vctx);
  ibv_qp* qb = vctx->create_qp_ex(ctx, &ix);  // extended: the ibv_wr_* API
  CHECK(qb);
  ibv_qp_ex* qbx = api.qp_to_qp_ex(qb);
  CHECK(qbx);
  connect(api, qa, qb->qp_num, pa.lid);
  connect(api, qb, qa->qp_num, pa.lid);

  const uint64_t base = reinterpret_cast<uintptr_t>(buf);
  const uint64_t probe = probe_ranges::begin_probe();
  probe_ranges::push("classic writes");
  for (int i = 0; i < writes; ++i) {  // A -> B, classic
    if (i % 10 == 0) probe_ranges::push_batch(i / 10);
    ibv_sge sge{base, size, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = base + kBuf / 2;
    wr.wr.rdma.rkey = mr->rkey;
    CHECK(ibv_post_send(qa, &wr, &bad) == 0);
    ++c.send_wrs;
    c.send_bytes += size;
    CHECK(wait_one(cq, c).status == IBV_WC_SUCCESS);
    if (i % 10 == 9 || i == writes - 1) probe_ranges::pop_batch();
  }
  probe_ranges::pop();
  probe_ranges::push_collective(0xc0ffee, size_t{2} * writes * size, 2);
  for (int i = 0; i < writes; ++i) {  // B -> A, ibv_wr_* (two WRs per batch)
    ibv_wr_start(qbx);
    for (int k = 0; k < 2; ++k) {
      qbx->wr_id = 1000 + 2 * i + k;
      qbx->wr_flags = IBV_SEND_SIGNALED;
      ibv_wr_rdma_write(qbx, mr->rkey, base + 4096);
      ibv_wr_set_sge(qbx, mr->lkey, base, size);
      ++c.send_wrs;
      c.send_bytes += size;
    }
    CHECK(ibv_wr_complete(qbx) == 0);
    CHECK(wait_one(cq, c).status == IBV_WC_SUCCESS);
    CHECK(wait_one(cq, c).status == IBV_WC_SUCCESS);
  }
  probe_ranges::pop_collective();
  probe_ranges::push_wide();
  for (int i = 0; i < sends; ++i) {  // A sends to B's posted receives
    ibv_sge rsge{base + 8192, size, mr->lkey};
    ibv_recv_wr rwr{}, *rbad = nullptr;
    rwr.wr_id = 5000 + i;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    CHECK(ibv_post_recv(qb, &rwr, &rbad) == 0);
    ++c.recv_wrs;
    ibv_sge sge{base, size, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = 6000 + i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    CHECK(ibv_post_send(qa, &wr, &bad) == 0);
    ++c.send_wrs;
    c.send_bytes += size;
    wait_one(cq, c);
    wait_one(cq, c);
  }
  probe_ranges::pop();
  probe_ranges::mark("bad rkey");
  probe_ranges::push("bad rkey write");
  {  // a wrong rkey: IBV_WC_REM_ACCESS_ERR at the requester
    ibv_sge sge{base, 16, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = 9999;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = base;
    wr.wr.rdma.rkey = mr->rkey + 1;
    CHECK(ibv_post_send(qa, &wr, &bad) == 0);
    ++c.send_wrs;
    c.send_bytes += 16;
    ibv_wc wc = wait_one(cq, c);
    CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 9999);
  }
  probe_ranges::pop();
  probe_ranges::end_probe(probe);
#ifndef VERBS_PROBE_DLOPEN
  {  // mlx5 direct verbs through the PLT: whatever it returns, errno must be the library's
    ibv_qp_init_attr_ex dx = ix;
    mlx5dv_qp_init_attr mx{};
    errno = 0;
    ibv_qp* q = mlx5dv_create_qp(ctx, &dx, &mx);
    std::printf("mlx5dv_create_qp: %s errno=%d\n", q ? "ok" : "failed", q ? 0 : errno);
    if (q) CHECK(api.destroy_qp(q) == 0);
  }
#endif
  std::printf("qp_a=%u qp_b=%u lid=%u\n", qa->qp_num, qb->qp_num, pa.lid);
  std::printf("send_wrs=%lu send_bytes=%lu recv_wrs=%lu completions=%lu error_completions=%lu\n", c.send_wrs, c.send_bytes, c.recv_wrs,
              c.completions, c.error_completions);
  CHECK(api.destroy_qp(qa) == 0);
  CHECK(api.destroy_qp(qb) == 0);
  CHECK(api.destroy_cq(cq) == 0);
  CHECK(api.dereg_mr(mr) == 0);
  CHECK(api.dealloc_pd(pd) == 0);
  CHECK(api.close_device(ctx) == 0);
  std::free(buf);
  return 0;
}
