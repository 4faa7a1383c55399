// A devx endpoint in host memory over softnic, driven by a CPU thread through the path a GPU
// thread takes (WQE stores, doorbell record, one 8-byte doorbell store to the UAR page): an RC
// QP with its SQ, CQ and doorbell records in one umem, and the WQE builders. Shared by the
// host-memory devx test and the doorbell-hijack client (tests/gpu/doorbell), which rings through
// a pointer the CUDA driver handed out instead of the UAR page itself (Endpoint::doorbell).
#pragma once
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"

namespace gda_host {

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;

#define HOST_REQUIRE(c)                                                                  \
  do {                                                                                   \
    if (!(c)) {                                                                          \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s (errno %d)\n", __FILE__, __LINE__, #c, \
              errno);                                                                    \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)
#define HOST_CHECK(c)                                                        \
  do {                                                                       \
    if (!(c)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
      g_failures++;                                                          \
    }                                                                        \
  } while (0)

inline int g_failures = 0;

// ---- a devx endpoint in host memory -----------------------------------------------------------
struct Endpoint {
  uint32_t log_sq = 6;
  uint32_t log_cq = 4;
  bool collapsed;
  uint8_t* buf = nullptr;  // [SQ][CQ][QP DBR 8][CQ DBR 8]
  size_t sq_bytes, cq_bytes;
  mlx5dv_devx_umem* umem = nullptr;
  mlx5dv_devx_uar* cq_uar = nullptr;
  mlx5dv_devx_uar* uar = nullptr;
  mlx5dv_devx_obj* cq = nullptr;
  mlx5dv_devx_obj* qp = nullptr;
  uint32_t cqn = 0, qpn = 0;
  uint64_t prod = 0;  // WQEBBs posted
  uint64_t ci = 0;    // ring CQ: CQEs consumed
  uint64_t* doorbell = nullptr;  // where ring() stores the doorbell (null: the UAR's reg_addr)
  // How ring() rings: alternating between the register and its BlueFlame twin (reg ^ 0x100), and
  // as BlueFlame (the last WQE's first 64 bytes, its own index in the control segment: libmlx5's
  // convention) instead of one 8-byte doorbell of the next free index (the GPU stacks').
  bool alternate_halves = false, blueflame = false;
  uint64_t rings = 0;
  bool shares_uar = false;  // its UAR page belongs to another endpoint (which frees it)
  uint64_t last_start = 0;  // the first WQEBB of the WQE posted last
  uint8_t* sq() { return buf; }
  uint8_t* cqbuf() { return buf + sq_bytes; }
  uint32_t* dbr() { return reinterpret_cast<uint32_t*>(buf + sq_bytes + cq_bytes); }
};

inline ibv_context* g_ctx;
inline uint32_t g_pdn;
inline uint16_t g_lid;

// Opens the first device (softnic's), its port 1 and a PD, and sets g_ctx, g_lid and g_pdn.
inline ibv_pd* open_host_device(ibv_device*** list_out) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  HOST_REQUIRE(list && n > 0);
  HOST_CHECK(mlx5dv_is_supported(list[0]));
  g_ctx = ibv_open_device(list[0]);
  HOST_REQUIRE(g_ctx);
  ibv_port_attr pa{};
  HOST_REQUIRE(ibv_query_port(g_ctx, 1, &pa) == 0);
  g_lid = pa.lid;
  ibv_pd* pd = ibv_alloc_pd(g_ctx);
  HOST_REQUIRE(pd);
  mlx5dv_pd dvpd{};
  mlx5dv_obj obj{};
  obj.pd.in = pd;
  obj.pd.out = &dvpd;
  HOST_REQUIRE(mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD) == 0);
  g_pdn = dvpd.pdn;
  *list_out = list;
  return pd;
}

// st: the QP's service type (RC, or a DC initiator: prm::kQpStDci).
// uar: the UAR page to create the QP on (shared with other QPs); null: one of its own.
inline void create_endpoint(Endpoint& e, bool collapsed, uint32_t st = prm::kQpStRc, mlx5dv_devx_uar* uar = nullptr) {
  e.collapsed = collapsed;
  e.sq_bytes = size_t(m5::kWqeBbSize) << e.log_sq;
  e.cq_bytes = collapsed ? m5::kCqeSize : (size_t(m5::kCqeSize) << e.log_cq);
  size_t total = e.sq_bytes + e.cq_bytes + 16;
  e.buf = static_cast<uint8_t*>(aligned_alloc(4096, (total + 4095) & ~size_t(4095)));
  memset(e.buf, 0, total);
  memset(e.cqbuf(), 0xff, e.cq_bytes);
  e.umem = mlx5dv_devx_umem_reg(g_ctx, e.buf, total, IBV_ACCESS_LOCAL_WRITE);
  HOST_REQUIRE(e.umem);
  uint32_t eqn = 0;
  HOST_REQUIRE(mlx5dv_devx_query_eqn(g_ctx, 0, &eqn) == 0);
  e.cq_uar = mlx5dv_devx_alloc_uar(g_ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
  HOST_REQUIRE(e.cq_uar);
  uint8_t in[prm::kCreateCqInSize] = {}, out[prm::kCreateCqOutSize] = {};
  prm::set(in, prm::kInOpcode, prm::kCreateCq);
  prm::set(in, prm::cq::cq_umem_valid, 1);
  prm::set(in, prm::cq::cq_umem_id, e.umem->umem_id);
  prm::set64(in, prm::cq::cq_umem_offset, e.sq_bytes);
  prm::set(in, prm::cq::dbr_umem_valid, 1);
  prm::set(in, prm::cq::dbr_umem_id, e.umem->umem_id);
  prm::set64(in, prm::cq::dbr_addr, e.sq_bytes + e.cq_bytes + 8);
  prm::set(in, prm::cq::cc, collapsed);
  prm::set(in, prm::cq::oi, 1);
  prm::set(in, prm::cq::log_cq_size, e.log_cq);
  prm::set(in, prm::cq::uar_page, e.cq_uar->page_id);
  prm::set(in, prm::cq::c_eqn, eqn);
  e.cq = mlx5dv_devx_obj_create(g_ctx, in, sizeof in, out, sizeof out);
  HOST_REQUIRE(e.cq);
  HOST_CHECK(prm::get(out, prm::kOutStatus) == 0);
  e.cqn = prm::get(out, prm::cq::out_cqn);

  e.uar = uar ? uar : mlx5dv_devx_alloc_uar(g_ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
  e.shares_uar = uar != nullptr;
  HOST_REQUIRE(e.uar);
  HOST_CHECK(reinterpret_cast<uintptr_t>(e.uar->reg_addr) - reinterpret_cast<uintptr_t>(e.uar->base_addr) ==
        m5::kUarDoorbellOffset);
  uint8_t qin[prm::kCreateQpInSize] = {}, qout[prm::kCreateQpOutSize] = {};
  prm::build_create_rc_qp(qin, {g_pdn, e.uar->page_id, e.cqn, e.log_sq, 0, e.umem->umem_id, e.umem->umem_id, 0,
                                e.sq_bytes + e.cq_bytes});
  prm::set(qin, prm::qp::st, st);
  e.qp = mlx5dv_devx_obj_create(g_ctx, qin, sizeof qin, qout, sizeof qout);
  HOST_REQUIRE(e.qp);
  e.qpn = prm::get(qout, prm::qp::out_qpn);
  HOST_CHECK(e.qpn != 0);
}

// dci: a DC initiator's transitions (no peer: INIT2RTR sets the MTU only, as NVSHMEM does).
inline void modify(Endpoint& e, uint16_t op, uint32_t remote_qpn, bool dci = false) {
  namespace q = prm::qp;
  uint8_t in[prm::kModifyQpInSize] = {}, out[prm::kModifyQpOutSize] = {};
  prm::set(in, prm::kInOpcode, op);
  prm::set(in, q::in_qpn, e.qpn);
  if (op == prm::kRst2Init) {
    prm::set(in, q::rwe, 1);
    prm::set(in, q::rre, 1);
    prm::set(in, q::rae, 1);
    prm::set(in, q::atomic_mode, 3);
    prm::set(in, q::vhca_port_num, 1);
    prm::set(in, q::pm_state, prm::kPmStateMigrated);
  } else if (op == prm::kInit2Rtr && dci) {
    prm::set(in, q::mtu, IBV_MTU_4096);
    prm::set(in, q::log_msg_max, 30);
  } else if (op == prm::kInit2Rtr) {
    prm::set(in, q::mtu, IBV_MTU_4096);
    prm::set(in, q::log_msg_max, 30);
    prm::set(in, q::remote_qpn, remote_qpn);
    prm::set(in, q::min_rnr_nak, 12);
    prm::set(in, q::log_rra_max, 4);
    prm::set(in, q::rlid, g_lid);
  } else if (op == prm::kRtr2Rts) {
    prm::set(in, q::log_sra_max, 4);
    prm::set(in, q::retry_count, 7);
    prm::set(in, q::rnr_retry, 7);
    prm::set(in, q::ack_timeout, 20);
  }
  int rc = mlx5dv_devx_obj_modify(e.qp, in, sizeof in, out, sizeof out);
  HOST_CHECK(rc == 0 && prm::get(out, prm::kOutStatus) == 0);
}

inline uint32_t query_state(Endpoint& e) {
  uint8_t in[16] = {}, out[prm::kQueryQpOutSize] = {};
  prm::set(in, prm::kInOpcode, prm::kQueryQp);
  prm::set(in, prm::qp::in_qpn, e.qpn);
  HOST_CHECK(mlx5dv_devx_obj_query(e.qp, in, sizeof in, out, sizeof out) == 0);
  return prm::get(out, prm::qp::state);
}

// ---- WQE building (what a GPU thread does) ----------------------------------------------------
inline uint8_t* wqe_at(Endpoint& e, uint64_t idx) {
  return e.sq() + ((idx & ((1u << e.log_sq) - 1)) << 6);
}

inline uint16_t post_rdma(Endpoint& e, uint8_t opcode, uint64_t laddr, uint32_t lkey, uint32_t len,
                          uint64_t raddr, uint32_t rkey, bool signal) {
  uint16_t idx = uint16_t(e.prod);
  e.last_start = e.prod;
  uint8_t* w = wqe_at(e, e.prod);
  memset(w, 0, 64);
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, opcode);
  c.qpn_ds = m5::ctrl_qpn_ds(e.qpn, 3);
  c.fm_ce_se = signal ? m5::kCtrlCqUpdate : 0;
  m5::RaddrSeg r{m5::be64(raddr), m5::be32(rkey), 0};
  m5::DataSeg d{m5::be32(len), m5::be32(lkey), m5::be64(laddr)};
  memcpy(w, &c, 16);
  memcpy(w + 16, &r, 16);
  memcpy(w + 32, &d, 16);
  e.prod++;
  return idx;
}

inline uint16_t post_write_inline(Endpoint& e, const void* data, uint32_t len, uint64_t raddr,
                                  uint32_t rkey, bool signal) {
  uint16_t idx = uint16_t(e.prod);
  e.last_start = e.prod;
  uint32_t ds = (32 + 4 + len + 15) / 16;
  uint32_t nbb = (ds * 16 + 63) / 64;
  uint8_t tmp[256] = {};
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, m5::kOpRdmaWrite);
  c.qpn_ds = m5::ctrl_qpn_ds(e.qpn, ds);
  c.fm_ce_se = signal ? m5::kCtrlCqUpdate : 0;
  m5::RaddrSeg r{m5::be64(raddr), m5::be32(rkey), 0};
  uint32_t hdr = m5::be32(len | m5::kInlineFlag);
  memcpy(tmp, &c, 16);
  memcpy(tmp + 16, &r, 16);
  memcpy(tmp + 32, &hdr, 4);
  memcpy(tmp + 36, data, len);
  for (uint32_t i = 0; i < nbb; ++i) memcpy(wqe_at(e, e.prod + i), tmp + 64 * i, 64);  // wrap-safe
  e.prod += nbb;
  return idx;
}

inline uint16_t post_atomic(Endpoint& e, uint8_t opcode, uint64_t swap_add, uint64_t compare,
                            uint64_t laddr, uint32_t lkey, uint64_t raddr, uint32_t rkey) {
  uint16_t idx = uint16_t(e.prod);
  e.last_start = e.prod;
  uint8_t* w = wqe_at(e, e.prod);
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, opcode);
  c.qpn_ds = m5::ctrl_qpn_ds(e.qpn, 4);
  c.fm_ce_se = m5::kCtrlCqUpdate;
  m5::RaddrSeg r{m5::be64(raddr), m5::be32(rkey), 0};
  m5::AtomicSeg a{m5::be64(swap_add), m5::be64(compare)};
  m5::DataSeg d{m5::be32(8), m5::be32(lkey), m5::be64(laddr)};
  memcpy(w, &c, 16);
  memcpy(w + 16, &r, 16);
  memcpy(w + 32, &a, 16);
  memcpy(w + 48, &d, 16);
  e.prod++;
  return idx;
}

inline uint16_t post_nop(Endpoint& e, bool signal) {
  uint16_t idx = uint16_t(e.prod);
  e.last_start = e.prod;
  uint8_t* w = wqe_at(e, e.prod);
  memset(w, 0, 64);
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, idx, m5::kOpNop);
  c.qpn_ds = m5::ctrl_qpn_ds(e.qpn, 1);
  c.fm_ce_se = signal ? m5::kCtrlCqUpdate : 0;
  memcpy(w, &c, 16);
  e.prod++;
  return idx;
}

// The doorbell record alone, as a writer leaves it whose doorbell store another QP's store to the
// same register overwrote before the NIC's watcher looked.
inline void update_record_only(Endpoint& e) {
  __atomic_thread_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&e.dbr()[m5::kDbrSendIndex], m5::be32(uint32_t(e.prod) & 0xffff), __ATOMIC_RELEASE);
}

// Doorbell record, fence, one 8-byte doorbell store (update_dbr = false: the record lags).
inline void ring(Endpoint& e, bool update_dbr = true) {
  __atomic_thread_fence(__ATOMIC_RELEASE);
  if (update_dbr)
    __atomic_store_n(&e.dbr()[m5::kDbrSendIndex], m5::be32(uint32_t(e.prod) & 0xffff), __ATOMIC_RELEASE);
  auto reg = reinterpret_cast<uintptr_t>(e.doorbell ? static_cast<void*>(e.doorbell) : e.uar->reg_addr);
  if (e.alternate_halves && (e.rings & 1)) reg ^= m5::kUarTwinOffset;
  ++e.rings;
  auto* db = reinterpret_cast<uint64_t*>(reg);
  if (!e.blueflame) {
    __atomic_store_n(db, m5::doorbell_value(uint16_t(e.prod), e.qpn), __ATOMIC_RELEASE);
    return;
  }
  uint64_t w[8];
  memcpy(w, wqe_at(e, e.last_start), 64);
  for (int k = 7; k >= 1; --k) __atomic_store_n(db + k, w[k], __ATOMIC_RELAXED);
  __atomic_store_n(db, w[0], __ATOMIC_RELEASE);  // the header last, as a writer that waits for the body would
}

struct Seen {
  bool ok;
  m5::CqeTail tail;
  uint8_t syndrome;
};

// Collapsed CQ: wait until entry 0 names wqe_counter `idx`.
inline Seen wait_collapsed(Endpoint& e, uint16_t idx) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    uint32_t w = __atomic_load_n(reinterpret_cast<uint32_t*>(e.cqbuf() + 60), __ATOMIC_ACQUIRE);
    m5::CqeTail t = m5::decode_cqe_tail(w);
    if (t.opcode != m5::kCqeInvalid && t.wqe_counter == idx) return {true, t, e.cqbuf()[m5::kCqeSyndrome]};
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) return {false, t, 0};
  }
}

// Ring CQ: the next CQE is valid when its owner bit equals the lap parity.
inline Seen wait_ring(Endpoint& e) {
  auto t0 = std::chrono::steady_clock::now();
  uint8_t* cqe = e.cqbuf() + ((e.ci & ((1u << e.log_cq) - 1)) * m5::kCqeSize);
  uint8_t parity = uint8_t((e.ci >> e.log_cq) & 1);
  for (;;) {
    uint32_t w = __atomic_load_n(reinterpret_cast<uint32_t*>(cqe + 60), __ATOMIC_ACQUIRE);
    m5::CqeTail t = m5::decode_cqe_tail(w);
    if (t.opcode != m5::kCqeInvalid && t.owner == parity) {
      e.ci++;
      return {true, t, cqe[m5::kCqeSyndrome]};
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) return {false, t, 0};
  }
}

}  // namespace gda_host
