// devx over softnic without a GPU: SQs, CQs and doorbell records in host memory, driven by a CPU
// thread through the same path a GPU thread takes (WQE stores, doorbell record, one 8-byte
// doorbell store to the UAR page). Checks PRM decoding, WQE execution (WRITE, inline WRITE,
// READ, CAS, FA, NOP), CQ_UPDATE, collapsed and ring CQs (owner parity, wrap), error CQEs with
// syndromes and flushes, and the src/mlx5 layouts against <infiniband/mlx5dv.h>. Each test
// connects fresh QPs of its own; the device, PD and the memory region they use are the suite's.
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "gda/device.cuh"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"
#include "host_endpoint.hpp"
#include "host_suite.hpp"

using namespace gda_host;

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;

namespace {

// ---- src/mlx5 against the system header -------------------------------------------------------
TEST(DevxLayouts, Src_Mlx5MatchesTheSystemHeaderAndThePrmBitPositions) {
  static_assert(sizeof(m5::CtrlSeg) == sizeof(mlx5_wqe_ctrl_seg));
  static_assert(offsetof(m5::CtrlSeg, qpn_ds) == offsetof(mlx5_wqe_ctrl_seg, qpn_ds));
  static_assert(offsetof(m5::CtrlSeg, fm_ce_se) == offsetof(mlx5_wqe_ctrl_seg, fm_ce_se));
  static_assert(offsetof(m5::CtrlSeg, imm) == offsetof(mlx5_wqe_ctrl_seg, imm));
  static_assert(sizeof(m5::RaddrSeg) == sizeof(mlx5_wqe_raddr_seg));
  static_assert(offsetof(m5::RaddrSeg, rkey) == offsetof(mlx5_wqe_raddr_seg, rkey));
  static_assert(sizeof(m5::DataSeg) == sizeof(mlx5_wqe_data_seg));
  static_assert(offsetof(m5::DataSeg, lkey) == offsetof(mlx5_wqe_data_seg, lkey));
  static_assert(offsetof(m5::DataSeg, addr) == offsetof(mlx5_wqe_data_seg, addr));
  static_assert(sizeof(m5::AtomicSeg) == sizeof(mlx5_wqe_atomic_seg));
  static_assert(offsetof(m5::AtomicSeg, compare) == offsetof(mlx5_wqe_atomic_seg, compare));
  static_assert(m5::kCqeWqeCounter == offsetof(mlx5_cqe64, wqe_counter));
  static_assert(m5::kCqeOpOwn == offsetof(mlx5_cqe64, op_own));
  static_assert(m5::kCqeByteCnt == offsetof(mlx5_cqe64, byte_cnt));
  static_assert(m5::kCqeSopDropQpn == offsetof(mlx5_cqe64, sop_drop_qpn));
  static_assert(m5::kCqeSyndrome == offsetof(mlx5_err_cqe, syndrome));
  static_assert(m5::kCqeVendorErrSynd == offsetof(mlx5_err_cqe, vendor_err_synd));
  static_assert(m5::kCtrlCqUpdate == MLX5_WQE_CTRL_CQ_UPDATE);
  static_assert(m5::kInlineFlag == MLX5_INLINE_SEG);
  static_assert(int(m5::kOpRdmaRead) == int(MLX5_OPCODE_RDMA_READ) && int(m5::kOpAtomicFa) == int(MLX5_OPCODE_ATOMIC_FA) &&
                int(m5::kOpAtomicMaskedCs) == int(MLX5_OPCODE_ATOMIC_MASKED_CS));
  static_assert(int(m5::kSyndRemoteAccessErr) == int(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR) &&
                int(m5::kSyndWrFlushErr) == int(MLX5_CQE_SYNDROME_WR_FLUSH_ERR));
  static_assert(m5::kDbrSendIndex == MLX5_SND_DBR);
  static_assert(int(m5::kCqeReqErr) == int(MLX5_CQE_REQ_ERR) && int(m5::kCqeInvalid) == int(MLX5_CQE_INVALID));
  // Doorbell bytes: byte1..2 = index, bytes 4..6 = QPN.
  uint64_t v = m5::doorbell_value(0x1234, 0xabcdef);
  uint8_t b[8];
  memcpy(b, &v, 8);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 0x12);
  EXPECT_EQ(b[2], 0x34);
  EXPECT_EQ(b[3], 0);
  EXPECT_EQ(b[4], 0xab);
  EXPECT_EQ(b[5], 0xcd);
  EXPECT_EQ(b[6], 0xef);
  EXPECT_EQ(b[7], 0);
  m5::Doorbell d = m5::decode_doorbell(v);
  EXPECT_EQ(d.pi, 0x1234);
  EXPECT_EQ(d.qpn, 0xabcdef);
  // PRM bit fields: qpc.st is byte 25 of create_qp_in; log_sq_size dw8 [14:11].
  uint8_t cmd[prm::kCreateQpInSize] = {};
  prm::set(cmd, prm::qp::st, 0x5);
  EXPECT_EQ(cmd[25], 0x05);
  prm::set(cmd, prm::qp::log_sq_size, 0xa);
  EXPECT_EQ(cmd[34], 0x50);
  EXPECT_EQ(cmd[35], 0x00);
  EXPECT_EQ(prm::get(cmd, prm::qp::log_sq_size), 0xa);
  prm::set(cmd, prm::qp::dbr_umem_valid, 1);
  EXPECT_EQ(cmd[232], 0x10);
  prm::set64(cmd, prm::qp::wq_umem_offset, 0x0102030405060708ull);
  EXPECT_EQ(cmd[256], 0x01);
  EXPECT_EQ(cmd[263], 0x08);
  EXPECT_EQ(prm::get64(cmd, prm::qp::wq_umem_offset), 0x0102030405060708ull);
  prm::set(cmd, prm::kInOpcode, prm::kCreateQp);
  EXPECT_EQ(cmd[0], 0x05);
  EXPECT_EQ(cmd[1], 0x00);
  // CQE tail word as one little-endian load.
  m5::Cqe cqe;
  m5::make_cqe(&cqe, m5::kCqeReqErr, 0xbeef, 0x123456, 8, m5::kOpRdmaWrite, 0x13, 1);
  uint32_t tail;
  memcpy(&tail, cqe.bytes + 60, 4);
  m5::CqeTail t = m5::decode_cqe_tail(tail);
  EXPECT_EQ(t.wqe_counter, 0xbeef);
  EXPECT_EQ(t.opcode, m5::kCqeReqErr);
  EXPECT_EQ(t.owner, 1);
  EXPECT_EQ(cqe.bytes[55], 0x13);
  EXPECT_EQ(cqe.bytes[56], m5::kOpRdmaWrite);
  EXPECT_EQ(cqe.bytes[57], 0x12);
}


// softnic's device opened once for the suite; QPs (endpoints) per test.
class DevxHost : public DevxHostSuite {
 protected:
  // A new RC QP with its CQ (collapsed or a ring) in host memory, in RESET.
  Endpoint& endpoint(bool collapsed, uint32_t log_sq = 6) {
    Endpoint& e = endpoints_.emplace_back();
    e.log_sq = log_sq;
    create_endpoint(e, collapsed);
    return e;
  }
  // Two QPs of this process connected to each other, both in RTS.
  static void connect(Endpoint& a, Endpoint& b) {
    for (Endpoint* e : {&a, &b}) modify(*e, prm::kRst2Init, 0);
    modify(a, prm::kInit2Rtr, b.qpn);
    modify(b, prm::kInit2Rtr, a.qpn);
    for (Endpoint* e : {&a, &b}) modify(*e, prm::kRtr2Rts, 0);
  }
  // `a` with a collapsed CQ, connected to `b` with a ring CQ and a 32-WQEBB SQ (wrapped below).
  std::pair<Endpoint&, Endpoint&> connected_pair() {
    Endpoint& a = endpoint(/*collapsed=*/true);
    Endpoint& b = endpoint(/*collapsed=*/false, /*log_sq=*/5);
    connect(a, b);
    return {a, b};
  }

  // The local source/destination area and the "remote" one (same process, reached through the wire).
  static uint8_t* src() { return mem_; }
  static uint8_t* dst() { return mem_ + 0x8000; }
  static uint64_t raddr() { return reinterpret_cast<uint64_t>(dst()); }
  static uint64_t laddr(const void* p) { return reinterpret_cast<uint64_t>(p); }
};

TEST_F(DevxHost, QueryHcaCapReportsCqeVersionRcAndAtomics) {
  uint8_t in[prm::kQueryHcaCapInSize] = {};
  std::vector<uint8_t> out(prm::kQueryHcaCapOutSize);
  prm::set(in, prm::kInOpcode, prm::kQueryHcaCap);
  prm::set(in, prm::kInOpMod, (prm::kCapGeneral << 1) | 1);
  ASSERT_EQ(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()), 0);
  EXPECT_EQ(prm::get(out.data(), prm::cap::cqe_version), 1u);
  EXPECT_EQ(prm::get(out.data(), prm::cap::rc), 1u);
  EXPECT_GE(prm::get(out.data(), prm::cap::log_max_qp_sz), 10u);
  prm::set(in, prm::kInOpMod, (prm::kCapAtomic << 1) | 1);
  ASSERT_EQ(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()), 0);
  uint32_t ops = prm::get(out.data(), prm::cap::atomic_operations);
  EXPECT_EQ(ops & (prm::kAtomicOpCas | prm::kAtomicOpFa), uint32_t(prm::kAtomicOpCas | prm::kAtomicOpFa));
  EXPECT_NE(prm::get(out.data(), prm::cap::atomic_size_qp) & prm::kAtomicSize8, 0u);
}

TEST_F(DevxHost, ACommandNamingAnUnknownPdFailsWithStatusAndErrnoLikeFirmware) {
  uint8_t in[prm::kCreateQpInSize] = {}, out[prm::kCreateQpOutSize] = {};
  prm::set(in, prm::kInOpcode, prm::kCreateQp);
  prm::set(in, prm::qp::pd, 0xfffff);
  errno = 0;
  mlx5dv_devx_obj* qp = mlx5dv_devx_obj_create(g_ctx, in, sizeof in, out, sizeof out);
  const int err = errno;
  EXPECT_EQ(qp, nullptr);
  EXPECT_EQ(err, EREMOTEIO);
  EXPECT_EQ(prm::get(out, prm::kOutStatus), uint32_t(prm::kStatusBadParam));
}

TEST_F(DevxHost, ModifyCommandsTakeTheQpFromResetToReadyToSend) {
  Endpoint& a = endpoint(true);
  Endpoint& b = endpoint(false, 5);
  EXPECT_EQ(query_state(a), uint32_t(prm::kQpsRst));
  for (Endpoint* e : {&a, &b}) modify(*e, prm::kRst2Init, 0);
  EXPECT_EQ(query_state(a), uint32_t(prm::kQpsInit));
  modify(a, prm::kInit2Rtr, b.qpn);
  modify(b, prm::kInit2Rtr, a.qpn);
  for (Endpoint* e : {&a, &b}) modify(*e, prm::kRtr2Rts, 0);
  EXPECT_EQ(query_state(a), uint32_t(prm::kQpsRts));
  EXPECT_EQ(query_state(b), uint32_t(prm::kQpsRts));
}

// Signalled, with the doorbell record left stale on purpose: the doorbell alone carries the index.
TEST_F(DevxHost, AnInlineWriteCompletesIntoTheCollapsedCqWithTheDoorbellRecordStale) {
  auto [a, b] = connected_pair();
  uint64_t v = 0x1122334455667788ull;
  uint16_t idx = post_write_inline(a, &v, 8, raddr(), mr_->rkey, true);
  ring(a, /*update_dbr=*/false);
  Seen s = wait_collapsed(a, idx);
  ASSERT_TRUE(s.ok) << "no CQE for WQE " << idx;
  EXPECT_EQ(s.tail.opcode, m5::kCqeReq);
  uint64_t got;
  memcpy(&got, dst(), 8);
  EXPECT_EQ(got, v);
}

TEST_F(DevxHost, AnUnsignalledWriteAndASignalledNopInOneDoorbellGiveOneCqeNamingTheNop) {
  auto [a, b] = connected_pair();
  for (int i = 0; i < 4096; ++i) src()[i] = uint8_t(i * 7 + 1);
  post_rdma(a, m5::kOpRdmaWrite, laddr(src()), mr_->lkey, 4096, raddr() + 64, mr_->rkey, false);
  uint16_t nop = post_nop(a, true);
  ring(a);
  Seen s = wait_collapsed(a, nop);
  ASSERT_TRUE(s.ok) << "no CQE for the NOP";
  EXPECT_EQ(s.tail.opcode, m5::kCqeReq);
  EXPECT_EQ(memcmp(src(), dst() + 64, 4096), 0);
}

TEST_F(DevxHost, AReadBringsTheRemoteBytes) {
  auto [a, b] = connected_pair();
  for (int i = 0; i < 256; ++i) dst()[0x2000 + i] = uint8_t(255 - i);
  uint16_t idx = post_rdma(a, m5::kOpRdmaRead, laddr(src() + 0x1000), mr_->lkey, 256, raddr() + 0x2000, mr_->rkey, true);
  ring(a);
  ASSERT_TRUE(wait_collapsed(a, idx).ok);
  EXPECT_EQ(memcmp(src() + 0x1000, dst() + 0x2000, 256), 0);
}

TEST_F(DevxHost, FetchAddReturnsEveryPreviousValueAndCompareAndSwapHitsAndMisses) {
  auto [a, b] = connected_pair();
  uint64_t* counter = reinterpret_cast<uint64_t*>(dst() + 0x3000);
  uint64_t* result = reinterpret_cast<uint64_t*>(src() + 0x3000);
  *counter = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    uint16_t idx = post_atomic(a, m5::kOpAtomicFa, 1, 0, laddr(result), mr_->lkey, raddr() + 0x3000, mr_->rkey);
    ring(a);
    ASSERT_TRUE(wait_collapsed(a, idx).ok) << "fetch-add " << i;
    ASSERT_EQ(*result, i) << "fetch-add " << i;
  }
  EXPECT_EQ(*counter, 50u);
  uint16_t idx = post_atomic(a, m5::kOpAtomicCs, 777, 50, laddr(result), mr_->lkey, raddr() + 0x3000, mr_->rkey);
  ring(a);
  ASSERT_TRUE(wait_collapsed(a, idx).ok);
  EXPECT_EQ(*result, 50u);
  EXPECT_EQ(*counter, 777u) << "the compare hit";
  idx = post_atomic(a, m5::kOpAtomicCs, 1, 50, laddr(result), mr_->lkey, raddr() + 0x3000, mr_->rkey);
  ring(a);
  ASSERT_TRUE(wait_collapsed(a, idx).ok);
  EXPECT_EQ(*result, 777u);
  EXPECT_EQ(*counter, 777u) << "the compare missed";
}

// 100 signalled WRITEs in batches of 5 (the SQ of 32 and the CQ of 16 wrap several times), owner
// parity and wqe_counter checked for every CQE; then, after 26 unsignalled NOPs, a 3-WQEBB inline
// WRITE (100 bytes) that wraps around the SQ's end, and an 8-byte masked FA (opmod 0x09, boundary
// 0), which is a fetch-add.
TEST_F(DevxHost, ARingCqWrapsWithOwnerParityAndWqesWrapTheSqEnd) {
  auto [a, b] = connected_pair();
  uint16_t expect = 0;
  for (int batch = 0; batch < 20; ++batch) {
    for (int k = 0; k < 5; ++k) {
      uint64_t v = uint64_t(batch * 5 + k) << 8 | 0xab;
      post_write_inline(b, &v, 8, laddr(src() + 0x4000 + 8 * (batch * 5 + k)), mr_->rkey, true);
    }
    ring(b);
    for (int k = 0; k < 5; ++k, ++expect) {
      Seen s = wait_ring(b);
      ASSERT_TRUE(s.ok) << "no CQE " << expect;
      EXPECT_EQ(s.tail.opcode, m5::kCqeReq);
      EXPECT_EQ(s.tail.wqe_counter, expect);
    }
  }
  for (int i = 0; i < 100; ++i) {
    uint64_t v;
    memcpy(&v, src() + 0x4000 + 8 * i, 8);
    EXPECT_EQ(v, uint64_t(i) << 8 | 0xab) << "write " << i;
  }

  for (int k = 0; k < 26; ++k) post_nop(b, false);
  ASSERT_EQ(b.prod & 31, 30u);
  uint8_t payload[100];
  for (int i = 0; i < 100; ++i) payload[i] = uint8_t(0x40 + i);
  uint16_t idx = post_write_inline(b, payload, 100, laddr(src() + 0x6000), mr_->rkey, true);
  ring(b);
  Seen s = wait_ring(b);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.tail.opcode, m5::kCqeReq);
  EXPECT_EQ(s.tail.wqe_counter, idx);
  EXPECT_EQ(memcmp(src() + 0x6000, payload, 100), 0);
  uint64_t* counter = reinterpret_cast<uint64_t*>(dst() + 0x7000);
  uint64_t* result = reinterpret_cast<uint64_t*>(src() + 0x7000);
  *counter = 40;
  uint16_t fa = uint16_t(b.prod);
  uint8_t* w = wqe_at(b, b.prod);
  post_atomic(b, m5::kOpAtomicMaskedFa, 2, 0, laddr(result), mr_->lkey, raddr() + 0x7000, mr_->rkey);
  m5::CtrlSeg c;
  memcpy(&c, w, 16);
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(m5::kOpmodExtAtomic8B, fa, m5::kOpAtomicMaskedFa);
  memcpy(w, &c, 16);
  ring(b);
  s = wait_ring(b);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.tail.opcode, m5::kCqeReq);
  EXPECT_EQ(s.tail.wqe_counter, fa);
  EXPECT_EQ(*result, 40u);
  EXPECT_EQ(*counter, 42u);
}

TEST_F(DevxHost, AWriteWithABadRkeyGivesARemoteAccessErrorCqeAndTheNextWqeIsFlushed) {
  auto [a, b] = connected_pair();
  uint16_t bad = post_rdma(a, m5::kOpRdmaWrite, laddr(src()), mr_->lkey, 8, raddr(), mr_->rkey ^ 0x5500, true);
  ring(a);
  Seen s = wait_collapsed(a, bad);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.tail.opcode, m5::kCqeReqErr);
  EXPECT_EQ(s.syndrome, m5::kSyndRemoteAccessErr);
  EXPECT_EQ(a.cqbuf()[56], m5::kOpRdmaWrite);
  uint16_t nop = post_nop(a, true);
  ring(a);
  Seen f = wait_collapsed(a, nop);
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.tail.opcode, m5::kCqeReqErr);
  EXPECT_EQ(f.syndrome, m5::kSyndWrFlushErr);
}

TEST_F(DevxHost, AnUnsupportedOpcodeIsRejectedWithLocalQpOperationError) {
  auto [a, b] = connected_pair();
  uint16_t idx = uint16_t(b.prod);
  uint8_t* w = wqe_at(b, b.prod);
  memset(w, 0, 64);
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, 0x2a);
  c.qpn_ds = m5::ctrl_qpn_ds(b.qpn, 1);
  c.fm_ce_se = 0;  // errors complete even without CQ_UPDATE
  memcpy(w, &c, 16);
  b.prod++;
  ring(b);
  Seen s = wait_ring(b);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.tail.opcode, m5::kCqeReqErr);
  EXPECT_EQ(s.syndrome, m5::kSyndLocalQpOpErr);
  EXPECT_EQ(s.tail.wqe_counter, idx);
}

// gda's own device-side code (gda/device.cuh compiled for the host) on two "PEs" in two CPU
// threads: put8 + quiet, get, fetch_add, barrier and a ping-pong, over collapsed CQs.
TEST_F(DevxHost, GdaDeviceCodeRunsPutGetFetchAddBarrierAndPingPongOnCpuThreads) {
  Endpoint& c = endpoint(true);
  Endpoint& d = endpoint(true);
  connect(c, d);
  const size_t kHeap = 1 << 16;
  uint8_t* heap[2];
  ibv_mr* hmr[2];
  for (int i = 0; i < 2; ++i) {
    heap[i] = static_cast<uint8_t*>(aligned_alloc(4096, kHeap));
    memset(heap[i], 0, kHeap);
    hmr[i] = ibv_reg_mr(pd_, heap[i], kHeap, kAccessAll);
    ASSERT_NE(hmr[i], nullptr);
  }
  gda::DeviceState st[2]{};
  Endpoint* eps[2] = {&c, &d};
  for (int i = 0; i < 2; ++i) {
    int peer = 1 - i;
    st[i].pe = i;
    st[i].npes = 2;
    st[i].heap = heap[i];
    st[i].heap_bytes = kHeap;
    st[i].lkey = hmr[i]->lkey;
    st[i].remote_heap[peer] = reinterpret_cast<uint64_t>(heap[peer]);
    st[i].rkey[peer] = hmr[peer]->rkey;
    st[i].timeout_ns = 10000000000ull;
    gda::QpDev& q = st[i].qp[peer];
    q.sq = eps[i]->sq();
    q.nwqes = 1u << eps[i]->log_sq;
    q.qpn = eps[i]->qpn;
    q.dbrec = eps[i]->dbr() + m5::kDbrSendIndex;
    q.bf = static_cast<uint64_t*>(eps[i]->uar->reg_addr);
    q.cqe = eps[i]->cqbuf();
  }
  namespace dev = gda::dev;
  const uint64_t kData = gda::kHeapReserved;
  // put8 + quiet, 200 times (the 64-WQEBB SQ wraps), then get each value back.
  for (uint64_t i = 0; i < 200; ++i) {
    ASSERT_TRUE(dev::put8(&st[0], 1, kData + 8 * (i % 32), i * 3 + 1)) << "put " << i;
    ASSERT_TRUE(dev::quiet(&st[0], 1)) << "quiet after put " << i;
  }
  for (uint64_t j = 0; j < 32; ++j) {
    ASSERT_TRUE(dev::get(&st[0], 1, kData + 1024, kData + 8 * j, 8)) << "get " << j;
    uint64_t v;
    memcpy(&v, heap[0] + kData + 1024, 8);
    uint64_t last = j + ((199 - j) / 32) * 32;
    EXPECT_EQ(v, last * 3 + 1) << "slot " << j;
  }
  for (uint64_t i = 0; i < 100; ++i) {
    uint64_t old = ~0ull;
    ASSERT_TRUE(dev::fetch_add(&st[0], 1, kData + 2048, 5, &old)) << "fetch-add " << i;
    ASSERT_EQ(old, 5 * i) << "fetch-add " << i;
  }
  EXPECT_EQ(st[0].qp[1].error, 0u);
  // Barrier + ping-pong between two threads.
  bool r0 = true, r1 = true;
  std::thread t1([&] {
    r1 &= dev::barrier(&st[1]);
    for (uint64_t i = 1; i <= 300; ++i) r1 &= dev::wait_eq(&st[1], kData + 4096, i) && dev::put8(&st[1], 0, kData + 4096, i);
    r1 &= dev::quiet(&st[1], 0) && dev::barrier(&st[1]);
  });
  r0 &= dev::barrier(&st[0]);
  for (uint64_t i = 1; i <= 300; ++i) r0 &= dev::put8(&st[0], 1, kData + 4096, i) && dev::wait_eq(&st[0], kData + 4096, i);
  r0 &= dev::quiet(&st[0], 1) && dev::barrier(&st[0]);
  t1.join();
  EXPECT_TRUE(r0) << "PE 0's barrier and ping-pong";
  EXPECT_TRUE(r1) << "PE 1's barrier and ping-pong";
  for (int i = 0; i < 2; ++i) {
    ibv_dereg_mr(hmr[i]);
    free(heap[i]);
  }
}

// With SOFTNIC_DEBUG=2 (the softnic.devx_dump test), SIGUSR2 makes softnic write a state dump
// naming every devx QP, and every thread's backtrace, to stderr.
TEST_F(DevxHost, Sigusr2DumpsEveryDevxQpAndEachThreadsBacktrace) {
  const char* dbg = getenv("SOFTNIC_DEBUG");
  if (!dbg || !(atoi(dbg) & 2)) GTEST_SKIP() << "needs SOFTNIC_DEBUG=2 (the softnic.devx_dump test sets it)";
  auto [a, b] = connected_pair();
  fflush(stderr);
  char path[] = "/tmp/devx-dump-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  raise(SIGUSR2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the other threads' backtraces
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  char buf[4096];
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, size_t(n));
  close(fd);
  unlink(path);
  char qp[32];
  snprintf(qp, sizeof qp, "qp 0x%x: state ", a.qpn);
  size_t backtraces = 0;
  for (size_t at = 0; (at = text.find("backtrace", at)) != std::string::npos; ++at) backtraces++;
  EXPECT_NE(text.find("state dump (SIGUSR2)"), std::string::npos) << text;
  EXPECT_NE(text.find(qp), std::string::npos) << text;
  EXPECT_NE(text.find("transport qp"), std::string::npos) << text;
  EXPECT_GE(backtraces, 3u) << "this thread, the devx engine, softnic's verbs engine:\n" << text;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // A fabric of this run's own unless the caller chose one: ctest runs other softnic tests at once.
  setenv("SOFTNIC_FABRIC", ("devx-host-" + std::to_string(getpid())).c_str(), /*overwrite=*/0);
  return RUN_ALL_TESTS();
}
