// Installs the data-path entry points into the objects applications hold: ctx->ops
// (post_send/post_recv/post_srq_recv/poll_cq/req_notify_cq), ibv_qp_ex wr_* and ibv_cq_ex.
// Everything posted goes through these pointers, so a profiler can patch them per object.
#pragma once
#include "core/context.hpp"
#include "core/objects.hpp"

namespace softnic {

void install_context_ops(Context* ctx);
// Like mlx5, the wr_complete entry depends on the QP state: posting is refused (EINVAL)
// until RTS; call again after every state change.
void install_qp_ex_ops(Qp* qp);
void install_cq_ex_ops(Cq* cq);

// Supported ibv_qp_ex send_ops_flags for RC QPs.
constexpr uint64_t kSupportedSendOps =
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

}  // namespace softnic
