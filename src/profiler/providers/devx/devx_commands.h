// What a devx command mailbox says, decoded with the PRM layouts of src/mlx5 (the definitions
// softnic executes and gda builds): CREATE_CQ, CREATE_QP and the QP state transitions. Pure
// functions of the command buffers (unit-tested in tests/devx/). A buffer shorter than the
// command's layout decodes as not valid: nothing is read past what the caller passed.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::profiler::devx {

// The command opcode of an input mailbox, 0 if it is too short to have one.
uint16_t command_of(const void* in, size_t inlen);
// The output header: status (byte 0) and syndrome; both 0 if out is too short.
void output_status(const void* out, size_t outlen, uint32_t* status, uint32_t* syndrome);

struct CqCreate {
  uint32_t cqn, log_cq_size, umem_id, dbr_umem_id, uar_page;
  uint64_t umem_offset, dbr_offset;
  bool collapsed;
};
bool decode_create_cq(const void* in, size_t inlen, const void* out, size_t outlen, CqCreate* cq);

struct QpCreate {
  uint32_t qpn, service_type, pd, log_sq_size, log_rq_size, sq_umem_id, dbr_umem_id, uar_page, send_cqn, recv_cqn;
  // Where the SQ starts in the WQ umem: after the receive queue, which comes first in the work
  // queue buffer when the QP has a regular RQ of its own.
  uint64_t sq_umem_offset, dbr_offset;
  bool sq_in_umem, dbr_in_umem;
};
bool decode_create_qp(const void* in, size_t inlen, const void* out, size_t outlen, QpCreate* qp);

// RST2INIT, INIT2RTR, RTR2RTS, RTS2RTS, INIT2INIT, 2ERR, 2RST: the fields each carries.
struct QpModify {
  uint32_t command, qpn, remote_qpn, remote_lid, send_psn, recv_psn, mtu;
  uint64_t remote_gid_hi, remote_gid_lo;
};
bool is_qp_modify(uint16_t command);
bool decode_modify_qp(const void* in, size_t inlen, QpModify* m);

// The object number a create command's output carries (CQN, QPN), 0 for other objects.
uint32_t created_object_id(uint16_t command, const void* out, size_t outlen);

}  // namespace sigmatrace::profiler::devx
