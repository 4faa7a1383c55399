// The verbs objects softnic's devx emulation builds its QPs from (one RC verbs QP and CQ behind
// each devx QP), reached through softnic's private interface instead of the exported ibv_*
// functions and the context's ops table: those are what applications call, and what a profiler
// interposes and patches. A ConnectX executes devx QPs without any verbs object; going around the
// public entry points keeps the emulator's transport out of a traced application's verbs calls
// (sigmatrace would otherwise record a second, verbs QP for every devx QP, and its posts).
// Exported under SOFTNIC_PRIVATE_1 (private_api.hpp); implemented in libibverbs next to the
// functions they stand for.
#pragma once
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "core/objects.hpp"
#include "core/private_api.hpp"

namespace softnic::transport {

SOFTNIC_PRIVATE_API ibv_cq* create_cq(ibv_context* ctx, int cqe);
SOFTNIC_PRIVATE_API int destroy_cq(ibv_cq* cq);
SOFTNIC_PRIVATE_API ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
SOFTNIC_PRIVATE_API int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
SOFTNIC_PRIVATE_API int destroy_qp(ibv_qp* qp);
SOFTNIC_PRIVATE_API int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
SOFTNIC_PRIVATE_API int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);

// DC objects: a DC initiator (the transport behind a devx DCI) or a DC target (what
// mlx5dv_create_qp makes of a DCT request), with the same state machine as the kernel's.
SOFTNIC_PRIVATE_API ibv_qp* create_dc_qp(ibv_pd* pd, ibv_qp_init_attr* attr, QpKind kind, uint64_t dc_key);
// Appends one operation to a QP's send queue (the devx engine: what a WQE asks for, including
// what ibv_send_wr cannot say: masked and 4-byte atomics, a DC target per operation) and
// transmits. sges: op.num_sge of them; inline_data: op.length bytes when op.inlined.
SOFTNIC_PRIVATE_API int post_op(ibv_qp* qp, const SendOp& op, const Sge* sges, const void* inline_data);
// The address vector mlx5dv_init_obj hands out for an address handle.
SOFTNIC_PRIVATE_API mlx5_wqe_av* address_vector(ibv_ah* ah);
// mlx5dv_create_qp for a DCT: a DC target on pd (a parent domain or a PD) with attr's SRQ and CQs.
SOFTNIC_PRIVATE_API ibv_qp* create_dct(ibv_context* ctx, ibv_qp_init_attr_ex* attr, uint64_t dc_key);

}  // namespace softnic::transport
