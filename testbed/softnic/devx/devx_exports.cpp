// libmlx5's devx entry points over softnic: UARs, umems, PRM commands (QUERY_HCA_CAP, CREATE_CQ,
// CREATE_QP, the QP state transitions, QUERY_QP, destroy) and mlx5dv_init_obj for PD, CQ and SRQ.
// Command buffers are decoded with src/mlx5/prm.hpp; failures answer like the firmware: a status
// and syndrome in the output header and errno EREMOTEIO.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/cuda_driver.hpp"
#include "core/exports.hpp"
#include "core/transport_api.hpp"
#include "devx/devx.hpp"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;

enum class ObjKind { Cq, Qp };
struct mlx5dv_devx_obj {
  ObjKind kind;
  ibv_context* ctx;
  softnic::devx::Cq* cq = nullptr;
  softnic::devx::Qp* qp = nullptr;
};

namespace softnic::devx {

// Never destroyed: the engine thread may still run while static destructors do (exit()).
std::mutex& mu() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<Uar*>& uars() {
  static auto* v = new std::vector<Uar*>;
  return *v;
}
std::vector<Qp*>& qps() {
  static auto* v = new std::vector<Qp*>;
  return *v;
}
Qp* find_qp(uint32_t qpn) {
  for (Qp* q : qps())
    if (q->qpn == qpn) return q;
  return nullptr;
}

namespace {
std::vector<Umem*> g_umems;
std::vector<Cq*> g_cqs;
// Numbers handed out by mlx5dv_init_obj for verbs objects (pdn, cqn, srqn).
std::vector<std::pair<void*, uint32_t>> g_numbers;
uint32_t g_next_number = 0x100;
uint32_t g_next_uar_page = 1;

uint32_t number_of(void* obj) {
  for (auto& [o, n] : g_numbers)
    if (o == obj) return n;
  g_numbers.emplace_back(obj, g_next_number);
  return g_next_number++;
}
void* object_of(uint32_t n) {
  for (auto& [o, k] : g_numbers)
    if (k == n) return o;
  return nullptr;
}
Umem* find_umem(uint32_t id) {
  for (Umem* u : g_umems)
    if (u->pub.umem_id == id) return u;
  return nullptr;
}
Uar* find_uar(uint32_t page_id) {
  for (Uar* u : uars())
    if (u->pub.page_id == page_id) return u;
  return nullptr;
}
Cq* find_cq(uint32_t cqn) {
  for (Cq* c : g_cqs)
    if (c->cqn == cqn) return c;
  return nullptr;
}

// Firmware-style failure: status + syndrome in the output, errno EREMOTEIO.
int fail(void* out, size_t outlen, uint8_t status, uint32_t syndrome, const char* why) {
  if (out && outlen >= prm::kOutHeaderSize) {
    memset(out, 0, prm::kOutHeaderSize);
    prm::set(out, prm::kOutStatus, status);
    prm::set(out, prm::kOutSyndrome, syndrome);
  }
  log("command failed: status 0x%x syndrome 0x%x: %s", status, syndrome, why);
  errno = EREMOTEIO;
  return EREMOTEIO;
}
void ok(void* out, size_t outlen) {
  if (out && outlen) memset(out, 0, outlen);
}

// SOFTNIC_COMPACT_AV=0 makes softnic report no compact (16-byte) address vectors: DC initiators
// then put the full 48-byte form into every WQE.
bool compact_address_vectors() {
  static const bool on = [] {
    const char* e = getenv("SOFTNIC_COMPACT_AV");
    return !(e && *e == '0');
  }();
  return on;
}

int query_hca_cap(const void* in, void* out, size_t outlen) {
  if (outlen < prm::kQueryHcaCapOutSize)
    return fail(out, outlen, prm::kStatusBadOutputLen, 0x1, "QUERY_HCA_CAP: short output");
  uint16_t op_mod = uint16_t(prm::get(in, prm::kInOpMod));
  uint16_t type = op_mod >> 1;
  ok(out, outlen);
  namespace c = prm::cap;
  if (type == prm::kCapGeneral) {
    prm::set(out, c::log_max_srq_sz, 15);
    prm::set(out, c::log_max_qp_sz, 15);
    prm::set(out, c::log_max_qp, 16);
    prm::set(out, c::log_max_srq, 16);
    prm::set(out, c::log_max_cq_sz, 22);
    prm::set(out, c::log_max_cq, 16);
    prm::set(out, c::log_max_ra_req_qp, 4);
    prm::set(out, c::log_max_ra_res_qp, 4);
    prm::set(out, c::gid_table_size, 1);
    prm::set(out, c::pkey_table_size, 128);
    prm::set(out, c::port_type, 0);  // InfiniBand (softnic ports are IB with LIDs)
    prm::set(out, c::num_ports, 1);
    prm::set(out, c::log_max_msg, 30);
    prm::set(out, c::cqe_version, 1);
    prm::set(out, c::compact_address_vector, compact_address_vectors() ? 1 : 0);
    prm::set(out, c::dct, 1);
    prm::set(out, c::log_max_ra_req_dc, 4);
    prm::set(out, c::log_max_ra_res_dc, 4);
    prm::set(out, c::atomic, 1);
    prm::set(out, c::rc, 1);
    prm::set(out, c::uar_4k, 1);
    prm::set(out, c::log_bf_reg_size, 8);  // 256-byte BlueFlame registers (as ConnectX)
    prm::set(out, c::max_wqe_sz_sq, 1024);
    prm::set(out, c::max_wqe_sz_rq, 512);
    prm::set(out, c::log_max_pd, 16);
    return 0;
  }
  if (type == prm::kCapAtomic) {
    // Executed on RC and DC alike: CAS and FA on 8 bytes, their masked forms on 4 and 8.
    prm::set(out, c::atomic_operations, prm::kAtomicOpCas | prm::kAtomicOpFa |
                                            prm::kAtomicOpMaskedCas | prm::kAtomicOpMaskedFa);
    prm::set(out, c::atomic_size_qp, prm::kAtomicSize4 | prm::kAtomicSize8);
    prm::set(out, c::atomic_size_dc, prm::kAtomicSize4 | prm::kAtomicSize8);
    // Fetched values are returned in host byte order (softnic's atomics), i.e. mode 1.
    prm::set(out, c::supported_atomic_req_8B_endianness_mode_1, 1);
    prm::set(out, c::atomic_req_8B_endianness_mode, 1);
    return 0;
  }
  return fail(out, outlen, prm::kStatusBadParam, 0x2, "QUERY_HCA_CAP: capability type not emulated");
}

mlx5dv_devx_obj* create_cq(ibv_context* ctx, const void* in, void* out, size_t outlen) {
  if (!prm::get(in, prm::cq::cq_umem_valid)) {
    fail(out, outlen, prm::kStatusBadParam, 0x10, "CREATE_CQ: only umem-backed CQs are emulated");
    return nullptr;
  }
  Umem* u = find_umem(prm::get(in, prm::cq::cq_umem_id));
  uint32_t log_size = prm::get(in, prm::cq::log_cq_size);
  uint64_t off = prm::get64(in, prm::cq::cq_umem_offset);
  if (!u || u->ctx != ctx) {
    fail(out, outlen, prm::kStatusBadParam, 0x11, "CREATE_CQ: unknown umem");
    return nullptr;
  }
  if (prm::get(in, prm::cq::cqe_sz) != 0 || log_size > 22) {
    fail(out, outlen, prm::kStatusBadParam, 0x12, "CREATE_CQ: only 64-byte CQEs, log size <= 22");
    return nullptr;
  }
  bool collapsed = prm::get(in, prm::cq::cc);
  uint64_t bytes = collapsed ? m5::kCqeSize : (uint64_t(m5::kCqeSize) << log_size);
  if (off > u->size || bytes > u->size - off) {
    fail(out, outlen, prm::kStatusBadParam, 0x13, "CREATE_CQ: ring exceeds its umem");
    return nullptr;
  }
  auto* c = new Cq{g_next_number++, ctx, u, off, log_size, collapsed};
  u->refs++;
  g_cqs.push_back(c);
  ok(out, outlen);
  prm::set(out, prm::cq::out_cqn, c->cqn);
  log("CREATE_CQ cqn 0x%x: umem %u+%llu, log size %u, %s, %s", c->cqn, u->pub.umem_id,
      (unsigned long long)off, log_size, collapsed ? "collapsed" : "ring", u->gpu ? "GPU" : "host");
  return new mlx5dv_devx_obj{ObjKind::Cq, ctx, c, nullptr};
}

mlx5dv_devx_obj* create_qp(ibv_context* ctx, const void* in, void* out, size_t outlen) {
  auto bad = [&](uint32_t synd, const char* why) -> mlx5dv_devx_obj* {
    fail(out, outlen, prm::kStatusBadParam, synd, why);
    return nullptr;
  };
  namespace q = prm::qp;
  const uint32_t st = prm::get(in, q::st);
  if (st != prm::kQpStRc && st != prm::kQpStDci)
    return bad(0x20, "CREATE_QP: only RC (st 0) and DCI (st 5) are emulated");
  auto* pd = static_cast<ibv_pd*>(object_of(prm::get(in, q::pd)));
  if (!pd || pd->context != ctx) return bad(0x21, "CREATE_QP: unknown pd (use mlx5dv_init_obj PD)");
  if (!prm::get(in, q::wq_umem_valid)) return bad(0x22, "CREATE_QP: only umem-backed WQs are emulated");
  Umem* wq = find_umem(prm::get(in, q::wq_umem_id));
  uint64_t wq_off = prm::get64(in, q::wq_umem_offset);
  // As on a ConnectX, a regular receive queue comes first in the work queue buffer, the SQ after it.
  if (prm::get(in, q::rq_type) == prm::kRqTypeRegular)
    wq_off += (uint64_t{1} << prm::get(in, q::log_rq_size)) << (prm::get(in, q::log_rq_stride) + 4);
  uint32_t log_sq = prm::get(in, q::log_sq_size);
  if (!wq || wq->ctx != ctx) return bad(0x23, "CREATE_QP: unknown WQ umem");
  if (log_sq > 15) return bad(0x24, "CREATE_QP: log_sq_size > 15");
  uint64_t sq_bytes = uint64_t(m5::kWqeBbSize) << log_sq;
  if (wq_off > wq->size || sq_bytes > wq->size - wq_off) return bad(0x25, "CREATE_QP: SQ exceeds its umem");
  Umem* dbr = nullptr;
  uint64_t dbr_off = prm::get64(in, q::dbr_addr);
  if (prm::get(in, q::dbr_umem_valid)) {
    dbr = find_umem(prm::get(in, q::dbr_umem_id));
    if (!dbr || dbr_off + m5::kDbrSize > dbr->size) return bad(0x26, "CREATE_QP: bad doorbell record umem");
  }
  Uar* uar = find_uar(prm::get(in, q::uar_page));
  if (!uar) return bad(0x27, "CREATE_QP: unknown uar_page");
  Cq* scq = find_cq(prm::get(in, q::cqn_snd));
  if (!scq) return bad(0x28, "CREATE_QP: cqn_snd is not a devx CQ");

  uint32_t sq_size = 1u << log_sq;
  ibv_cq* icq = transport::create_cq(ctx, int(2 * sq_size + 16));
  if (!icq) return bad(0x29, "CREATE_QP: no internal CQ");
  ibv_qp_init_attr ia{};
  ia.send_cq = icq;
  ia.recv_cq = icq;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  ia.cap.max_send_wr = sq_size;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = 30;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 1024;
  ibv_qp* iqp = st == prm::kQpStDci ? transport::create_dc_qp(pd, &ia, QpKind::dci, 0) : transport::create_qp(pd, &ia);
  if (!iqp) {
    transport::destroy_cq(icq);
    return bad(0x2a, "CREATE_QP: no internal QP");
  }
  to_qp(iqp)->carries_devx_qp = true;  // its work is the devx QP's, which the devx engine logs
  auto* qp = new Qp;
  qp->qpn = iqp->qp_num;
  qp->dci = st == prm::kQpStDci;
  qp->ctx = ctx;
  qp->pd = pd;
  qp->qp = iqp;
  qp->icq = icq;
  qp->scq = scq;
  qp->wq = wq;
  qp->wq_off = wq_off;
  qp->log_sq = log_sq;
  qp->dbr = dbr;
  qp->dbr_off = dbr_off;
  qp->uar = uar;
  qp->user_index = prm::get(in, q::user_index);
  scq->refs++;
  wq->refs++;
  if (dbr) dbr->refs++;
  uar->refs++;
  qps().push_back(qp);
  ok(out, outlen);
  prm::set(out, q::out_qpn, qp->qpn);
  log("CREATE_QP %s qpn 0x%x: SQ 2^%u WQEBBs in umem %u+%llu (%s), cq 0x%x, uar page %u", qp->dci ? "DCI" : "RC", qp->qpn, log_sq,
      wq->pub.umem_id, (unsigned long long)wq_off, wq->gpu ? "GPU" : "host", scq->cqn, uar->pub.page_id);
  return new mlx5dv_devx_obj{ObjKind::Qp, ctx, nullptr, qp};
}

int modify_qp(Qp* qp, const void* in, void* out, size_t outlen) {
  namespace q = prm::qp;
  uint16_t op = uint16_t(prm::get(in, prm::kInOpcode));
  if (prm::get(in, q::in_qpn) != qp->qpn)
    return fail(out, outlen, prm::kStatusBadParam, 0x30, "modify: qpn does not match the object");
  ibv_qp_attr a{};
  int mask = IBV_QP_STATE;
  uint32_t next;
  switch (op) {
    case prm::kRst2Init:
      next = prm::kQpsInit;
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = uint16_t(prm::get(in, q::pkey_index));
      a.port_num = uint8_t(prm::get(in, q::vhca_port_num));
      if (a.port_num == 0) a.port_num = 1;
      mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      if (qp->dci) break;  // an initiator only: nothing is accepted from remote
      a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
                          (prm::get(in, q::rwe) ? IBV_ACCESS_REMOTE_WRITE : 0) |
                          (prm::get(in, q::rre) ? IBV_ACCESS_REMOTE_READ : 0) |
                          (prm::get(in, q::rae) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
      mask |= IBV_QP_ACCESS_FLAGS;
      break;
    case prm::kInit2Rtr: {
      next = prm::kQpsRtr;
      a.qp_state = IBV_QPS_RTR;
      uint32_t mtu = prm::get(in, q::mtu);
      a.path_mtu = ibv_mtu(mtu >= 1 && mtu <= 5 ? mtu : uint32_t(IBV_MTU_1024));
      if (qp->dci) {  // the target comes with every WQE
        mask |= IBV_QP_PATH_MTU;
        break;
      }
      a.dest_qp_num = prm::get(in, q::remote_qpn);
      a.rq_psn = prm::get(in, q::next_rcv_psn);
      a.max_dest_rd_atomic = uint8_t(std::min(16u, 1u << prm::get(in, q::log_rra_max)));
      a.min_rnr_timer = uint8_t(prm::get(in, q::min_rnr_nak));
      a.ah_attr.dlid = uint16_t(prm::get(in, q::rlid));
      a.ah_attr.sl = uint8_t(prm::get(in, q::sl));
      a.ah_attr.port_num = 1;
      if (prm::get(in, q::grh)) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, static_cast<const uint8_t*>(in) + q::kRgidRipByte, 16);
        a.ah_attr.grh.sgid_index = uint8_t(prm::get(in, q::src_addr_index));
        a.ah_attr.grh.hop_limit = uint8_t(prm::get(in, q::hop_limit));
        a.ah_attr.grh.traffic_class = uint8_t(prm::get(in, q::tclass));
      }
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      qp->remote_qpn = a.dest_qp_num;
      break;
    }
    case prm::kRtr2Rts:
      next = prm::kQpsRts;
      a.qp_state = IBV_QPS_RTS;
      a.sq_psn = prm::get(in, q::next_send_psn);
      a.timeout = uint8_t(prm::get(in, q::ack_timeout));
      a.retry_cnt = uint8_t(prm::get(in, q::retry_count));
      a.rnr_retry = uint8_t(prm::get(in, q::rnr_retry));
      a.max_rd_atomic = uint8_t(std::min(16u, 1u << prm::get(in, q::log_sra_max)));
      mask |= IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC;
      break;
    case prm::kRts2Rts:
      if (qp->state != prm::kQpsRts)
        return fail(out, outlen, prm::kStatusBadResourceState, 0x31, "RTS2RTS: QP is not in RTS");
      ok(out, outlen);
      return 0;
    case prm::k2Err:
      next = prm::kQpsErr;
      a.qp_state = IBV_QPS_ERR;
      break;
    case prm::k2Rst:
      next = prm::kQpsRst;
      a.qp_state = IBV_QPS_RESET;
      break;
    default:
      return fail(out, outlen, prm::kStatusBadOp, 0x32, "modify: command not emulated");
  }
  if (int err = transport::modify_qp(qp->qp, &a, mask)) {
    (void)err;
    return fail(out, outlen, prm::kStatusBadResourceState, 0x33, "modify: invalid transition or attributes");
  }
  qp->state = next;
  if (next == prm::kQpsRst) qp_reset(qp);
  if (next == prm::kQpsErr) qp->broken = qp->in_error = true;
  log("QP 0x%x -> state %u%s", qp->qpn, next,
      op == prm::kInit2Rtr ? " (remote qpn set)" : "");
  ok(out, outlen);
  return 0;
}

int query_qp(Qp* qp, const void* in, void* out, size_t outlen) {
  if (outlen < prm::kQueryQpOutSize)
    return fail(out, outlen, prm::kStatusBadOutputLen, 0x40, "QUERY_QP: short output");
  ok(out, outlen);
  namespace q = prm::qp;
  prm::set(out, q::state, qp->state);
  prm::set(out, q::st, qp->dci ? prm::kQpStDci : prm::kQpStRc);
  prm::set(out, q::pm_state, prm::kPmStateMigrated);
  prm::set(out, q::log_sq_size, qp->log_sq);
  prm::set(out, q::remote_qpn, qp->remote_qpn);
  prm::set(out, q::cqn_snd, qp->scq->cqn);
  prm::set(out, q::uar_page, qp->uar->pub.page_id);
  prm::set(out, q::user_index, qp->user_index);
  return 0;
}

}  // namespace

// Used by mlx5dv_init_obj (mlx5dv_exports.cpp).
int init_obj(mlx5dv_obj* obj, uint64_t type) {
  std::lock_guard<std::mutex> g(mu());
  if (type & ~uint64_t(MLX5DV_OBJ_PD | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_AH)) return EOPNOTSUPP;
  if (type & MLX5DV_OBJ_AH) {
    obj->ah.out->av = transport::address_vector(obj->ah.in);
    obj->ah.out->comp_mask = 0;
  }
  if (type & MLX5DV_OBJ_PD) {
    // A parent domain has the number of the protection domain it stands for.
    const auto* pd = reinterpret_cast<const softnic::Pd*>(obj->pd.in)->protection();
    obj->pd.out->pdn = number_of(const_cast<ibv_pd*>(&pd->pd));
    obj->pd.out->comp_mask = 0;
  }
  if (type & MLX5DV_OBJ_CQ) {
    // A verbs CQ keeps completing through ibv_poll_cq; its number serves as cqn_rcv. The ring
    // handed back is one never-written invalid CQE.
    static uint8_t dummy_ring[m5::kCqeSize] __attribute__((aligned(64)));
    static uint32_t dummy_dbr[2];
    memset(dummy_ring, 0xff, sizeof dummy_ring);
    obj->cq.out->buf = dummy_ring;
    obj->cq.out->dbrec = dummy_dbr;
    obj->cq.out->cqe_cnt = 1;
    obj->cq.out->cqe_size = m5::kCqeSize;
    obj->cq.out->cq_uar = nullptr;
    obj->cq.out->cqn = number_of(obj->cq.in);
    obj->cq.out->comp_mask = 0;
  }
  if (type & MLX5DV_OBJ_SRQ) {
    memset(obj->srq.out, 0, offsetof(mlx5dv_srq, comp_mask));
    if (obj->srq.out->comp_mask & MLX5DV_SRQ_MASK_SRQN) obj->srq.out->srqn = number_of(obj->srq.in);
  }
  return 0;
}

}  // namespace softnic::devx

using namespace softnic::devx;

SOFTNIC_EXPORT mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(ibv_context* ctx, uint32_t flags) {
  if (flags != prm::kUarAllocBf && flags != prm::kUarAllocNc && flags != prm::kUarAllocNcDedicated) {
    errno = EINVAL;
    return nullptr;
  }
  // Every allocation gets its own page (also for NC, which rdma-core shares per context): the
  // engine tells doorbells apart by page, so a shared page could hide one of two close rings.
  void* page = mmap(nullptr, m5::kUarPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return nullptr;
  std::lock_guard<std::mutex> g(mu());
  auto* u = new Uar{};
  u->ctx = ctx;
  u->page = page;
  u->pub.base_addr = page;
  u->pub.reg_addr = static_cast<char*>(page) + m5::kUarDoorbellOffset;
  u->pub.page_id = g_next_uar_page++;
  u->pub.mmap_off = 0;
  u->pub.comp_mask = 0;
  uars().push_back(u);
  engine_start();
  log("UAR page %u at %p (doorbell %p)", u->pub.page_id, page, u->pub.reg_addr);
  return &u->pub;
}

SOFTNIC_EXPORT void mlx5dv_devx_free_uar(mlx5dv_devx_uar* pub) {
  if (!pub) return;
  auto* u = reinterpret_cast<Uar*>(pub);
  std::lock_guard<std::mutex> g(mu());
  if (u->refs) {
    log("UAR page %u freed while QPs still use it: kept", u->pub.page_id);
    return;
  }
  auto& v = uars();
  v.erase(std::remove(v.begin(), v.end(), u), v.end());
  engine_stop_if_idle();
  munmap(u->page, m5::kUarPageSize);
  delete u;
}

static mlx5dv_devx_umem* umem_register(ibv_context* ctx, void* addr, size_t size) {
  if (!ctx || !addr || size == 0) {
    errno = EINVAL;
    return nullptr;
  }
  auto* u = new Umem{};
  u->ctx = ctx;
  u->addr = reinterpret_cast<uint64_t>(addr);
  u->size = size;
  u->gpu = softnic::cuda::is_device_pointer(addr, &u->cu_ctx);
  std::lock_guard<std::mutex> g(mu());
  static uint32_t next_id = 1;
  u->pub.umem_id = next_id++;
  g_umems.push_back(u);
  log("umem %u: %zu bytes at %p (%s)", u->pub.umem_id, size, addr, u->gpu ? "GPU" : "host");
  return &u->pub;
}

SOFTNIC_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg(ibv_context* ctx, void* addr, size_t size,
                                                      uint32_t access) {
  return umem_register(ctx, addr, size);
}

SOFTNIC_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg_ex(ibv_context* ctx, mlx5dv_devx_umem_in* in) {
  if (!in) {
    errno = EINVAL;
    return nullptr;
  }
  if (in->comp_mask & MLX5DV_UMEM_MASK_DMABUF) {
    // A dma-buf carries no virtual address the engine could copy from.
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return umem_register(ctx, in->addr, in->size);
}

SOFTNIC_EXPORT int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem* pub) {
  auto* u = reinterpret_cast<Umem*>(pub);
  std::lock_guard<std::mutex> g(mu());
  auto it = std::find(g_umems.begin(), g_umems.end(), u);
  if (it == g_umems.end()) return EINVAL;
  if (u->refs) return EBUSY;
  g_umems.erase(it);
  delete u;
  return 0;
}

SOFTNIC_EXPORT int mlx5dv_devx_general_cmd(ibv_context* ctx, const void* in, size_t inlen, void* out,
                                           size_t outlen) {
  if (!in || inlen < 8 || !out || outlen < prm::kOutHeaderSize) return EINVAL;
  std::lock_guard<std::mutex> g(mu());
  uint16_t op = uint16_t(prm::get(in, prm::kInOpcode));
  if (op == prm::kQueryHcaCap) return query_hca_cap(in, out, outlen);
  return fail(out, outlen, prm::kStatusBadOp, 0x3, "general command not emulated");
}

SOFTNIC_EXPORT mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* ctx, const void* in, size_t inlen,
                                                       void* out, size_t outlen) {
  if (!ctx || !in || !out || outlen < prm::kOutHeaderSize) {
    errno = EINVAL;
    return nullptr;
  }
  std::lock_guard<std::mutex> g(mu());
  uint16_t op = uint16_t(prm::get(in, prm::kInOpcode));
  if (op == prm::kCreateCq) {
    if (inlen < prm::kCreateCqInSize) {
      fail(out, outlen, prm::kStatusBadInputLen, 0x4, "CREATE_CQ: short input");
      return nullptr;
    }
    return create_cq(ctx, in, out, outlen);
  }
  if (op == prm::kCreateQp) {
    if (inlen < prm::kCreateQpInSize) {
      fail(out, outlen, prm::kStatusBadInputLen, 0x5, "CREATE_QP: short input");
      return nullptr;
    }
    return create_qp(ctx, in, out, outlen);
  }
  fail(out, outlen, prm::kStatusBadOp, 0x6, "object type not emulated");
  return nullptr;
}

SOFTNIC_EXPORT int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out,
                                          size_t outlen) {
  if (!obj || !in || !out || outlen < prm::kOutHeaderSize) return EINVAL;
  std::lock_guard<std::mutex> g(mu());
  if (obj->kind != ObjKind::Qp) return fail(out, outlen, prm::kStatusBadOp, 0x7, "modify of a non-QP");
  if (inlen < prm::kModifyQpInSize) return fail(out, outlen, prm::kStatusBadInputLen, 0x8, "modify: short input");
  return modify_qp(obj->qp, in, out, outlen);
}

SOFTNIC_EXPORT int mlx5dv_devx_obj_query(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out,
                                         size_t outlen) {
  if (!obj || !in || !out || outlen < prm::kOutHeaderSize) return EINVAL;
  std::lock_guard<std::mutex> g(mu());
  uint16_t op = uint16_t(prm::get(in, prm::kInOpcode));
  if (obj->kind == ObjKind::Qp && op == prm::kQueryQp) return query_qp(obj->qp, in, out, outlen);
  return fail(out, outlen, prm::kStatusBadOp, 0x9, "query not emulated");
}

SOFTNIC_EXPORT int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* obj) {
  if (!obj) return EINVAL;
  std::lock_guard<std::mutex> g(mu());
  if (obj->kind == ObjKind::Cq) {
    Cq* c = obj->cq;
    if (c->refs) return EBUSY;
    g_cqs.erase(std::remove(g_cqs.begin(), g_cqs.end(), c), g_cqs.end());
    c->umem->refs--;
    delete c;
  } else {
    Qp* q = obj->qp;
    print_qp_stats(q);
    write_wqe_oracle(q);
    if (int err = softnic::transport::destroy_qp(q->qp)) return err;
    softnic::transport::destroy_cq(q->icq);
    auto& v = qps();
    v.erase(std::remove(v.begin(), v.end(), q), v.end());
    q->scq->refs--;
    q->wq->refs--;
    if (q->dbr) q->dbr->refs--;
    q->uar->refs--;
    delete q;
  }
  delete obj;
  return 0;
}

SOFTNIC_EXPORT int mlx5dv_devx_query_eqn(ibv_context*, uint32_t vector, uint32_t* eqn) {
  if (!eqn) return EINVAL;
  *eqn = vector;  // one completion vector per port: EQ numbers equal vectors
  return 0;
}

// For softnic's platform stand-in (platform/): whether [p, p + len) lies in one of this
// process's UAR pages, which a ConnectX maps as device memory and softnic as ordinary memory.
extern "C" __attribute__((visibility("default"))) bool softnic_uar_contains(const void* p, size_t len) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> g(mu());
  for (const Uar* u : uars()) {
    const auto base = reinterpret_cast<uintptr_t>(u->page);
    if (a >= base && a - base < m5::kUarPageSize && len <= m5::kUarPageSize - (a - base)) return true;
  }
  return false;
}
