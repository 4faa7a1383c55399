// What NVSHMEM IBGDA asks of a ConnectX beyond RC QPs, over softnic without a GPU (CI): the
// capabilities it checks (4- and 8-byte atomics on QPs and DC), parent domains, address handles
// through mlx5dv_init_obj, DC targets made with mlx5dv_create_qp on a parent domain with an SRQ,
// DC initiators made with devx CREATE_QP (st 5) whose WQEs carry a compact or full address
// vector, and the masked atomics in NVSHMEM's layouts (its barrier's 8-byte "set", and/or/xor,
// 4-byte fetch-add and compare-swap, whose old values come back big-endian). The queues are in
// host memory and a CPU thread plays the GPU thread (host_endpoint.hpp).
#include <gtest/gtest.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <deque>
#include <vector>

#include "host_endpoint.hpp"
#include "host_suite.hpp"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"

using namespace gda_host;

namespace {

constexpr uint64_t kDcKey = 0x5623CEAF;  // NVSHMEM's

// A DCT as NVSHMEM makes it: on a parent domain of the PD, with an SRQ and two CQs, INIT then RTR.
struct Dct {
  ibv_pd* parent = nullptr;
  ibv_srq* srq = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_ah* ah = nullptr;
  mlx5_wqe_av av{};  // what mlx5dv_init_obj(AH) gave, with the DCT's number and key filled in
};

class DevxDc : public DevxHostSuite {
 protected:
  void TearDown() override {
    DevxHostSuite::TearDown();  // the DCIs before their targets
    for (Dct& d : dcts_) {
      EXPECT_EQ(ibv_destroy_qp(d.qp), 0);
      EXPECT_EQ(ibv_destroy_ah(d.ah), 0);
      EXPECT_EQ(ibv_destroy_srq(d.srq), 0);
      EXPECT_EQ(ibv_destroy_cq(d.cq), 0);
      EXPECT_EQ(ibv_dealloc_pd(d.parent), 0);
    }
    dcts_.clear();
  }

  Dct& dct(uint64_t key = kDcKey) {
    Dct& d = dcts_.emplace_back();
    ibv_parent_domain_init_attr pa{};
    pa.pd = pd_;
    d.parent = ibv_alloc_parent_domain(g_ctx, &pa);
    EXPECT_NE(d.parent, nullptr) << "ibv_alloc_parent_domain: errno " << errno;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 64;
    sa.attr.max_sge = 1;
    d.srq = ibv_create_srq(d.parent, &sa);
    d.cq = ibv_create_cq(g_ctx, 64, nullptr, nullptr, 0);
    EXPECT_TRUE(d.srq && d.cq);
    ibv_qp_init_attr_ex ia{};
    ia.comp_mask = IBV_QP_INIT_ATTR_PD;
    ia.pd = d.parent;
    ia.qp_type = IBV_QPT_DRIVER;
    ia.srq = d.srq;
    ia.send_cq = ia.recv_cq = d.cq;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    mlx5dv_qp_init_attr dv{};
    dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
    dv.dc_init_attr.dct_access_key = key;
    d.qp = mlx5dv_create_qp(g_ctx, &ia, &dv);
    EXPECT_NE(d.qp, nullptr) << "mlx5dv_create_qp (DCT): errno " << errno;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = kAccessAll;
    EXPECT_EQ(ibv_modify_qp(d.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    ibv_ah_attr ah{};
    ah.dlid = g_lid;
    ah.port_num = 1;
    ah.static_rate = 0xa5;  // NVSHMEM leaves it uninitialised: only its low bits may be taken
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.min_rnr_timer = 12;
    a.ah_attr = ah;
    EXPECT_EQ(ibv_modify_qp(d.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER), 0);
    d.ah = ibv_create_ah(pd_, &ah);
    EXPECT_NE(d.ah, nullptr);
    mlx5dv_ah dvah{};
    mlx5dv_obj obj{};
    obj.ah.in = d.ah;
    obj.ah.out = &dvah;
    EXPECT_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH), 0);
    if (dvah.av) d.av = *dvah.av;
    d.av.key.dc_key = htobe64(key);
    return d;
  }

  // A devx QP: RC (connected later) or a DC initiator (in RTS at once).
  Endpoint& endpoint(bool dci) {
    Endpoint& e = endpoints_.emplace_back();
    e.log_sq = 6;
    create_endpoint(e, /*collapsed=*/true, dci ? prm::kQpStDci : prm::kQpStRc);
    if (dci)
      for (uint16_t op : {prm::kRst2Init, prm::kInit2Rtr, prm::kRtr2Rts}) modify(e, op, 0, /*dci=*/true);
    return e;
  }
  void connect(Endpoint& a, Endpoint& b) {
    for (Endpoint* e : {&a, &b}) modify(*e, prm::kRst2Init, 0);
    modify(a, prm::kInit2Rtr, b.qpn);
    modify(b, prm::kInit2Rtr, a.qpn);
    for (Endpoint* e : {&a, &b}) modify(*e, prm::kRtr2Rts, 0);
  }

  // One WQE as NVSHMEM lays it out: the control segment, the address vector (a DCI's: compact or
  // full), then `segs` (the raddr, atomic and data segments), a NOP carrying the completion when
  // the WQE spans two WQEBBs. Returns the index the CQE names.
  uint16_t post(Endpoint& e, uint8_t opcode, uint8_t opmod, const std::vector<uint8_t>& segs, const Dct* to, bool full_av) {
    std::vector<uint8_t> w(16);
    if (to) {
      mlx5_wqe_av av = to->av;
      av.dqp_dct = htobe32((full_av ? m5::kAvExtended : 0) | to->qp->qp_num);
      const uint8_t* p = reinterpret_cast<const uint8_t*>(&av);
      w.insert(w.end(), p, p + (full_av ? m5::kAvFullSize : m5::kAvCompactSize));
    }
    w.insert(w.end(), segs.begin(), segs.end());
    const uint32_t ds = uint32_t(w.size() / 16), wqebbs = (ds * 16 + 63) / 64;
    const uint16_t idx = uint16_t(e.prod);
    m5::CtrlSeg c{};
    c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(opmod, idx, opcode);
    c.qpn_ds = m5::ctrl_qpn_ds(e.qpn, ds);
    c.fm_ce_se = wqebbs == 1 ? m5::kCtrlCqUpdate : 0;
    memcpy(w.data(), &c, 16);
    w.resize(size_t(wqebbs) * 64, 0xee);  // what NVSHMEM leaves unwritten holds anything
    for (uint32_t i = 0; i < wqebbs; ++i) memcpy(wqe_at(e, e.prod + i), w.data() + 64 * i, 64);
    e.prod += wqebbs;
    return wqebbs == 1 ? idx : post_nop(e, true);
  }

  static void put(std::vector<uint8_t>& v, uint64_t x, int bytes) {  // big-endian
    for (int i = bytes - 1; i >= 0; --i) v.push_back(uint8_t(x >> (8 * i)));
  }
  std::vector<uint8_t> raddr_seg(uint64_t raddr) {
    std::vector<uint8_t> v;
    put(v, raddr, 8);
    put(v, mr_->rkey, 4);
    put(v, 0, 4);
    return v;
  }
  void data_seg(std::vector<uint8_t>& v, const void* local, uint32_t len) {
    put(v, len, 4);
    put(v, mr_->lkey, 4);
    put(v, reinterpret_cast<uint64_t>(local), 8);
  }
  // A masked atomic on `target` (4 or 8 bytes) as NVSHMEM writes it; the old value lands in *fetched.
  uint16_t masked(Endpoint& e, bool cs, int bytes, uint64_t a, uint64_t b, uint64_t c, uint64_t d, void* target, void* fetched,
                  const Dct* to = nullptr) {
    std::vector<uint8_t> v = raddr_seg(reinterpret_cast<uint64_t>(target));
    if (bytes == 4) {
      put(v, a, 4), put(v, b, 4);
      if (cs) put(v, c, 4), put(v, d, 4);
      else put(v, 0xdeadbeefcafef00dull, 8);  // never written by NVSHMEM
    } else {
      put(v, a, 8), put(v, b, 8);
      if (cs) put(v, c, 8), put(v, d, 8);
    }
    data_seg(v, fetched, uint32_t(bytes));
    return post(e, cs ? m5::kOpAtomicMaskedCs : m5::kOpAtomicMaskedFa, bytes == 4 ? m5::kOpmodExtAtomic4B : m5::kOpmodExtAtomic8B,
                v, to, false);
  }

  std::deque<Dct> dcts_;
};

TEST_F(DevxDc, CapabilitiesOfferFourAndEightByteAtomicsOnQpsAndDcAndDcTargets) {
  uint8_t in[prm::kQueryHcaCapInSize] = {};
  std::vector<uint8_t> out(prm::kQueryHcaCapOutSize);
  prm::set(in, prm::kInOpcode, prm::kQueryHcaCap);
  prm::set(in, prm::kInOpMod, (prm::kCapAtomic << 1) | 1);
  ASSERT_EQ(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()), 0);
  EXPECT_EQ(prm::get(out.data(), prm::cap::atomic_operations), 0xfu);
  EXPECT_EQ(prm::get(out.data(), prm::cap::atomic_size_qp) & 0xc, 0xcu);
  EXPECT_EQ(prm::get(out.data(), prm::cap::atomic_size_dc) & 0xc, 0xcu);
  prm::set(in, prm::kInOpMod, (prm::kCapGeneral << 1) | 1);
  ASSERT_EQ(mlx5dv_devx_general_cmd(g_ctx, in, sizeof in, out.data(), out.size()), 0);
  EXPECT_EQ(prm::get(out.data(), prm::cap::dct), 1u);
}

TEST_F(DevxDc, AnAddressHandlesVectorNamesItsPortAndTheDctIsNumberedAtCreation) {
  Dct& d = dct();
  EXPECT_NE(d.qp->qp_num, 0u);
  EXPECT_EQ(be16toh(d.av.rlid), g_lid);
  EXPECT_EQ(d.av.stat_rate_sl & 0xf, 0) << "SL 0";
  EXPECT_EQ(d.av.grh_gid_fl, 0u) << "not global";
  // A DCT never goes to RTS, and RTR takes exactly the address, the MTU and the RNR timer.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  EXPECT_NE(ibv_modify_qp(d.qp, &a, IBV_QP_STATE), 0);
}

TEST_F(DevxDc, ADcInitiatorWritesReadsAndAddsAtADctWithCompactAndFullAddressVectors) {
  Dct& d = dct();
  Endpoint& dci = endpoint(/*dci=*/true);
  uint8_t* src = mem_;
  uint8_t* dst = mem_ + 0x8000;
  for (int i = 0; i < 512; ++i) src[i] = uint8_t(i * 7);
  for (bool full : {false, true}) {
    memset(dst, 0, 512);
    std::vector<uint8_t> v = raddr_seg(reinterpret_cast<uint64_t>(dst));
    data_seg(v, src, 512);
    uint16_t idx = post(dci, m5::kOpRdmaWrite, 0, v, &d, full);
    ring(dci);
    ASSERT_TRUE(wait_collapsed(dci, idx).ok) << (full ? "full" : "compact") << " AV write";
    EXPECT_EQ(dci.cqbuf()[63] >> 4, m5::kCqeReq);
    EXPECT_EQ(memcmp(src, dst, 512), 0);
    uint8_t* back = mem_ + 0x4000;
    v = raddr_seg(reinterpret_cast<uint64_t>(dst + 100));
    data_seg(v, back, 64);
    idx = post(dci, m5::kOpRdmaRead, 0, v, &d, full);
    ring(dci);
    ASSERT_TRUE(wait_collapsed(dci, idx).ok) << "read";
    EXPECT_EQ(memcmp(back, src + 100, 64), 0);
  }
  auto* counter = reinterpret_cast<uint64_t*>(mem_ + 0x9000);
  auto* old = reinterpret_cast<uint64_t*>(mem_ + 0x5000);
  for (uint64_t i = 0; i < 5; ++i) {
    uint16_t idx = masked(dci, false, 8, 3, 0, 0, 0, counter, old, &d);  // NVSHMEM's 8-byte add
    ring(dci);
    ASSERT_TRUE(wait_collapsed(dci, idx).ok);
    EXPECT_EQ(*old, 3 * i);
  }
  EXPECT_EQ(*counter, 15u);
}

TEST_F(DevxDc, ADcTargetRefusesAnInitiatorWithAnotherKey) {
  Dct& d = dct(/*key=*/0x1234);
  d.av.key.dc_key = htobe64(kDcKey);  // the initiator presents another key
  Endpoint& dci = endpoint(/*dci=*/true);
  std::vector<uint8_t> v = raddr_seg(reinterpret_cast<uint64_t>(mem_ + 0x8000));
  data_seg(v, mem_, 64);
  uint16_t idx = post(dci, m5::kOpRdmaWrite, 0, v, &d, false);
  ring(dci);
  Seen s = wait_collapsed(dci, idx);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.tail.opcode, m5::kCqeReqErr);
  EXPECT_EQ(s.syndrome, m5::kSyndRemoteAccessErr);
}

// NVSHMEM's encodings (its ibgda device code): set/signal = masked CS with compare mask 0 and swap
// mask all ones (its barrier's signal), and = swap ~v... here as the NIC must execute them.
TEST_F(DevxDc, MaskedAtomicsExecuteNvshmemsSetAndOrXorAndFourByteForms) {
  Endpoint& a = endpoint(false);
  Endpoint& b = endpoint(false);
  connect(a, b);
  auto* t64 = reinterpret_cast<uint64_t*>(mem_ + 0x9000);
  auto* t32 = reinterpret_cast<uint32_t*>(mem_ + 0x9100);
  auto* f64 = reinterpret_cast<uint64_t*>(mem_ + 0x5000);
  auto* f32 = reinterpret_cast<uint32_t*>(mem_ + 0x5100);
  auto run = [&](uint16_t idx) {
    ring(a);
    Seen s = wait_collapsed(a, idx);
    EXPECT_TRUE(s.ok);
    EXPECT_EQ(s.tail.opcode, m5::kCqeReq) << "syndrome 0x" << std::hex << int(s.syndrome);
  };
  *t64 = 0x1111;
  run(masked(a, true, 8, 0x42, 0, ~0ull, 0, t64, f64));  // set: whatever the old value
  EXPECT_EQ(*t64, 0x42u);
  EXPECT_EQ(*f64, 0x1111u) << "8-byte results in host order";
  *t64 = 0xff0f;
  run(masked(a, true, 8, 0x00f0, 0, ~uint64_t(0x00f0), 0, t64, f64));  // and 0x00f0
  EXPECT_EQ(*t64, 0x00f0u & 0xff0f);
  *t64 = 0x0f00;
  run(masked(a, true, 8, 0x00ff, 0, 0x00ff, 0, t64, f64));  // or 0x00ff
  EXPECT_EQ(*t64, 0x0fffu);
  run(masked(a, false, 8, 0x0ff0, ~0ull, 0, 0, t64, f64));  // xor: every bit a field boundary
  EXPECT_EQ(*t64, 0x0fffu ^ 0x0ff0);
  EXPECT_EQ(*f64, 0x0fffu);
  *t64 = 7;
  run(masked(a, true, 8, 9, 7, ~0ull, ~0ull, t64, f64));  // a full compare-swap that hits
  EXPECT_EQ(*t64, 9u);
  run(masked(a, true, 8, 1, 7, ~0ull, ~0ull, t64, f64));  // and one that misses
  EXPECT_EQ(*t64, 9u);
  *t32 = 0x10;
  t32[1] = 0xabcdef;  // the neighbouring word must not change
  run(masked(a, false, 4, 5, 0, 0, 0, t32, f32));  // 4-byte fetch-add
  EXPECT_EQ(*t32, 0x15u);
  EXPECT_EQ(*f32, be32toh(0x10u)) << "4-byte results big-endian";
  run(masked(a, true, 4, 0x99, 0x15, ~0u, ~0u, t32, f32));  // 4-byte compare-swap
  EXPECT_EQ(*t32, 0x99u);
  EXPECT_EQ(be32toh(*f32), 0x15u);
  EXPECT_EQ(t32[1], 0xabcdefu);
}

}  // namespace
