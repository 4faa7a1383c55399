// One side of a two-process verbs scenario (verbs_scenarios.cpp): the socket the two sides
// exchange addresses and barriers over, and one RC QP with its device, PD, CQ and a registered
// 1 MiB buffer, with the posting and waiting the scenarios share. Every step is an expectation,
// which ends the side when it fails (the sides run with --gtest_throw_on_failure).
#pragma once
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace softnic_scenarios {

inline int g_sock = -1;  // to the other side

inline void send_all(const void* p, size_t n) { EXPECT_EQ(write(g_sock, p, n), ssize_t(n)) << strerror(errno); }
inline void recv_all(void* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(g_sock, static_cast<char*>(p) + got, n - got);
    EXPECT_GT(r, 0) << "the other side is gone";
    got += size_t(r);
  }
}
inline void barrier() {
  char c = 'b';
  send_all(&c, 1);
  recv_all(&c, 1);
}

struct Wire {
  uint16_t lid;
  uint32_t qpn, psn, rkey;
  uint64_t addr;
};

constexpr size_t kBuf = 1 << 20;

struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  ibv_qp* qp = nullptr;
  uint8_t* buf = nullptr;
  uint16_t lid = 0;

  void open() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    EXPECT_NE(list, nullptr);
    EXPECT_GE(n, 1);
    ctx = ibv_open_device(list[0]);
    EXPECT_NE(ctx, nullptr);
    ibv_free_device_list(list);
    ibv_port_attr pa;
    EXPECT_EQ(ibv_query_port(ctx, 1, &pa), 0);
    EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
    lid = pa.lid;
    pd = ibv_alloc_pd(ctx);
    EXPECT_NE(pd, nullptr);
    buf = static_cast<uint8_t*>(aligned_alloc(4096, kBuf));
    memset(buf, 0, kBuf);
    mr = ibv_reg_mr(pd, buf, kBuf,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
    EXPECT_NE(mr, nullptr);
    cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
    EXPECT_NE(cq, nullptr);
  }
  void close() {
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    EXPECT_EQ(ibv_close_device(ctx), 0);
    free(buf);
  }

  void make_qp(bool ex) {
    if (ex) {
      ibv_qp_init_attr_ex a{};
      a.send_cq = a.recv_cq = cq;
      a.cap.max_send_wr = a.cap.max_recv_wr = 64;
      a.cap.max_send_sge = a.cap.max_recv_sge = 4;
      a.cap.max_inline_data = 64;
      a.qp_type = IBV_QPT_RC;
      a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      a.pd = pd;
      a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND |
                         IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
      qp = ibv_create_qp_ex(ctx, &a);
      EXPECT_NE(qp, nullptr);
      EXPECT_TRUE(ibv_qp_to_qp_ex(qp));
    } else {
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq;
      a.cap.max_send_wr = a.cap.max_recv_wr = 64;
      a.cap.max_send_sge = a.cap.max_recv_sge = 4;
      a.cap.max_inline_data = 64;
      a.qp_type = IBV_QPT_RC;
      qp = ibv_create_qp(pd, &a);
      EXPECT_NE(qp, nullptr);
      EXPECT_FALSE(ibv_qp_to_qp_ex(qp));
    }
  }

  void to_init() {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
  }

  // Exchanges addresses and brings the QP to RTS; returns the peer's description.
  Wire connect(uint8_t rnr_retry = 7, uint8_t min_rnr_timer = 1) {
    if (state() == IBV_QPS_RESET) to_init();
    Wire me{lid, qp->qp_num, uint32_t(lrand48() & 0xffffff), mr->rkey, reinterpret_cast<uint64_t>(buf)};
    Wire peer;
    send_all(&me, sizeof(me));
    recv_all(&peer, sizeof(peer));
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = min_rnr_timer;
    a.ah_attr.dlid = peer.lid;
    a.ah_attr.port_num = 1;
    EXPECT_EQ(ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
              0);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr_retry;
    a.sq_psn = me.psn;
    a.max_rd_atomic = 4;
    EXPECT_EQ(ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                IBV_QP_MAX_QP_RD_ATOMIC),
              0);
    return peer;
  }

  void destroy_qp() {
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    qp = nullptr;
  }

  // line: the caller's, so that a timeout says which step waited in vain.
  ibv_wc wait_wc(int timeout_ms = 10000, int line = __builtin_LINE()) {
    ibv_wc wc{};
    auto t0 = std::chrono::steady_clock::now();
    while (ibv_poll_cq(cq, 1, &wc) == 0) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(timeout_ms)) {
        ADD_FAILURE_AT(__FILE__, line) << "no completion within " << timeout_ms << " ms";
        break;  // not reached: the failure throws
      }
    }
    return wc;
  }

  int post(ibv_wr_opcode op, uint64_t wr_id, std::vector<ibv_sge> sges, uint64_t raddr, uint32_t rkey,
           unsigned flags = IBV_SEND_SIGNALED, uint32_t imm = 0) {
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = sges.data();
    wr.num_sge = int(sges.size());
    wr.send_flags = flags;
    wr.imm_data = htobe32(imm);
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &wr, &bad);
  }
  int post_atomic(ibv_wr_opcode op, uint64_t wr_id, ibv_sge sge, uint64_t raddr, uint32_t rkey, uint64_t a,
                  uint64_t b) {
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = a;
    wr.wr.atomic.swap = b;
    return ibv_post_send(qp, &wr, &bad);
  }
  void post_recv(uint64_t wr_id, std::vector<ibv_sge> sges) {
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = sges.data();
    wr.num_sge = int(sges.size());
    EXPECT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
  }
  ibv_sge sge(size_t off, uint32_t len) { return ibv_sge{reinterpret_cast<uint64_t>(buf + off), len, mr->lkey}; }
  ibv_qp_state state() {
    ibv_qp_attr a;
    ibv_qp_init_attr i;
    EXPECT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &i), 0);
    return a.qp_state;
  }
};

}  // namespace softnic_scenarios
