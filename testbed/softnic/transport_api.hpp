// The verbs objects softnic's devx emulation builds its QPs from (one RC verbs QP and CQ behind
// each devx QP), reached through softnic's private interface instead of the exported ibv_*
// functions and the context's ops table: those are what applications call, and what a profiler
// interposes and patches. A ConnectX executes devx QPs without any verbs object; going around the
// public entry points keeps the emulator's transport out of a traced application's verbs calls
// (sigmatrace would otherwise record a second, verbs QP for every devx QP, and its posts).
// Exported under SOFTNIC_PRIVATE_1 (private_api.hpp); implemented in libibverbs next to the
// functions they stand for.
#pragma once
#include <infiniband/verbs.h>

#include "private_api.hpp"

namespace softnic::transport {

SOFTNIC_PRIVATE_API ibv_cq* create_cq(ibv_context* ctx, int cqe);
SOFTNIC_PRIVATE_API int destroy_cq(ibv_cq* cq);
SOFTNIC_PRIVATE_API ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
SOFTNIC_PRIVATE_API int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
SOFTNIC_PRIVATE_API int destroy_qp(ibv_qp* qp);
SOFTNIC_PRIVATE_API int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
SOFTNIC_PRIVATE_API int poll_cq(ibv_cq* cq, int n, ibv_wc* wc);

}  // namespace softnic::transport
