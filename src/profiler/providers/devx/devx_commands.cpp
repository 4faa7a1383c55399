#include "profiler/providers/devx/devx_commands.h"

#include "mlx5/prm.hpp"

namespace sigmatrace::profiler::devx {

namespace prm = sigmatrace::mlx5::prm;

uint16_t command_of(const void* in, size_t inlen) { return inlen >= 4 ? uint16_t(prm::get(in, prm::kInOpcode)) : 0; }

void output_status(const void* out, size_t outlen, uint32_t* status, uint32_t* syndrome) {
  *status = *syndrome = 0;
  if (!out || outlen < prm::kOutHeaderSize) return;
  *status = prm::get(out, prm::kOutStatus);
  *syndrome = prm::get(out, prm::kOutSyndrome);
}

bool decode_create_cq(const void* in, size_t inlen, const void* out, size_t outlen, CqCreate* cq) {
  if (inlen < prm::kCreateCqInSize || command_of(in, inlen) != prm::kCreateCq) return false;
  namespace c = prm::cq;
  *cq = CqCreate{};
  cq->cqn = created_object_id(prm::kCreateCq, out, outlen);
  cq->log_cq_size = prm::get(in, c::log_cq_size);
  if (prm::get(in, c::cq_umem_valid)) {
    cq->umem_id = prm::get(in, c::cq_umem_id);
    cq->umem_offset = prm::get64(in, c::cq_umem_offset);
  }
  if (prm::get(in, c::dbr_umem_valid)) cq->dbr_umem_id = prm::get(in, c::dbr_umem_id);
  cq->dbr_offset = prm::get64(in, c::dbr_addr);
  cq->uar_page = prm::get(in, c::uar_page);
  cq->collapsed = prm::get(in, c::cc) != 0;
  return true;
}

bool decode_create_qp(const void* in, size_t inlen, const void* out, size_t outlen, QpCreate* qp) {
  if (inlen < prm::kCreateQpInSize || command_of(in, inlen) != prm::kCreateQp) return false;
  namespace q = prm::qp;
  *qp = QpCreate{};
  qp->qpn = created_object_id(prm::kCreateQp, out, outlen);
  qp->service_type = prm::get(in, q::st);
  qp->pd = prm::get(in, q::pd);
  qp->log_sq_size = prm::get(in, q::no_sq) ? 0 : prm::get(in, q::log_sq_size);
  qp->log_rq_size = prm::get(in, q::log_rq_size);
  qp->sq_in_umem = prm::get(in, q::wq_umem_valid) != 0;
  if (qp->sq_in_umem) {
    qp->sq_umem_id = prm::get(in, q::wq_umem_id);
    qp->sq_umem_offset = prm::get64(in, q::wq_umem_offset);
    if (prm::get(in, q::rq_type) == prm::kRqTypeRegular)
      qp->sq_umem_offset += (uint64_t{1} << qp->log_rq_size) << (prm::get(in, q::log_rq_stride) + 4);
  }
  qp->dbr_in_umem = prm::get(in, q::dbr_umem_valid) != 0;
  if (qp->dbr_in_umem) qp->dbr_umem_id = prm::get(in, q::dbr_umem_id);
  qp->dbr_offset = prm::get64(in, q::dbr_addr);
  qp->uar_page = prm::get(in, q::uar_page);
  qp->send_cqn = prm::get(in, q::cqn_snd);
  qp->recv_cqn = prm::get(in, q::cqn_rcv);
  return true;
}

bool is_qp_modify(uint16_t command) {
  switch (command) {
    case prm::kRst2Init: case prm::kInit2Rtr: case prm::kRtr2Rts: case prm::kRts2Rts:
    case prm::kInit2Init: case prm::k2Err: case prm::k2Rst:
      return true;
    default:
      return false;
  }
}

bool decode_modify_qp(const void* in, size_t inlen, QpModify* m) {
  const uint16_t cmd = command_of(in, inlen);
  if (!is_qp_modify(cmd)) return false;
  namespace q = prm::qp;
  *m = QpModify{};
  m->command = cmd;
  // 2ERR and 2RST carry only the QPN (their mailbox is the 16-byte header).
  if (inlen < 16) return false;
  m->qpn = prm::get(in, q::in_qpn);
  if (cmd == prm::k2Err || cmd == prm::k2Rst || inlen < prm::kModifyQpInSize) return true;
  const auto* b = static_cast<const uint8_t*>(in);
  if (cmd == prm::kInit2Rtr) {
    m->remote_qpn = prm::get(in, q::remote_qpn);
    m->remote_lid = prm::get(in, q::rlid);
    m->recv_psn = prm::get(in, q::next_rcv_psn);
    m->mtu = prm::get(in, q::mtu);
    if (prm::get(in, q::grh)) {
      for (int i = 0; i < 8; ++i) m->remote_gid_hi = (m->remote_gid_hi << 8) | b[q::kRgidRipByte + i];
      for (int i = 8; i < 16; ++i) m->remote_gid_lo = (m->remote_gid_lo << 8) | b[q::kRgidRipByte + i];
    }
  } else if (cmd == prm::kRtr2Rts) {
    m->send_psn = prm::get(in, q::next_send_psn);
  }
  return true;
}

uint32_t created_object_id(uint16_t command, const void* out, size_t outlen) {
  if (!out || outlen < prm::kOutHeaderSize) return 0;
  if (command == prm::kCreateCq) return prm::get(out, prm::cq::out_cqn);
  if (command == prm::kCreateQp) return prm::get(out, prm::qp::out_qpn);
  return 0;
}

}  // namespace sigmatrace::profiler::devx
