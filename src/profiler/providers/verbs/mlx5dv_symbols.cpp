// The "mlx5" provider: exported mlx5 direct-verbs functions that create verbs objects outside
// libibverbs' entry points (mlx5dv_open_device, mlx5dv_create_qp, mlx5dv_create_cq). The objects
// they return are recorded and patched exactly like the ibverbs provider's, so their data path is
// traced through the same table wrappers (which needs the "ibverbs" provider on as well).
// Control path only. Return values and errno are the real function's; a missing real function
// fails with ENOSYS (logged once).
#pragma GCC visibility push(default)
#include <infiniband/mlx5dv.h>
#pragma GCC visibility pop

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/verbs/ibverbs_state.h"
#include "profiler/providers/provider.h"

namespace sigmatrace::profiler {
namespace mlx5 {

std::atomic<bool> g_active{false};

#define SIGMATRACE_MLX5DV_SYMBOLS(X) X(mlx5dv_open_device) X(mlx5dv_create_qp) X(mlx5dv_create_cq)

namespace real {
#define SIGMATRACE_REAL_SYMBOL(name) RealSymbol name{#name, "libmlx5.so.1", {}, {}};
SIGMATRACE_MLX5DV_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace real

inline bool tracing(const ibv::Reentry& g) { return g.outer && g_active.load(std::memory_order_relaxed) && ibv::active(); }

namespace {
bool init_mlx5(const Config&, std::string*) { return true; }
}  // namespace

}  // namespace mlx5

extern const InterposedSymbolTable kMlx5dvInterposedSymbols;  // below
extern const Provider kMlx5Provider = {"mlx5", "mlx5 direct verbs: devices, QPs and CQs created through mlx5dv", &mlx5::init_mlx5,
                                       &mlx5::g_active, &kMlx5dvInterposedSymbols};

}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;
using sigmatrace::profiler::ibv::ErrnoKeeper;
using sigmatrace::profiler::ibv::IbvCall;
using sigmatrace::profiler::ibv::Reentry;

#define SIGMATRACE_REAL_OR(name, type, fail) SIGMATRACE_CONTROL_CALL(mlx5::real::name, type, fail)

SIGMATRACE_EXPORT ibv_context* mlx5dv_open_device(ibv_device* device, mlx5dv_context_attr* attr) {
  SIGMATRACE_REAL_OR(mlx5dv_open_device, ibv_context* (*)(ibv_device*, mlx5dv_context_attr*), nullptr);
  ibv_context* ctx = fn(device, attr);
  if (!mlx5::tracing(guard)) return ctx;
  ErrnoKeeper keep;
  if (ctx) ibv::on_device_opened(ctx, device);
  else ibv::record_error(IbvCall::open_device, reinterpret_cast<uintptr_t>(device), keep.saved);
  return ctx;
}

SIGMATRACE_EXPORT ibv_qp* mlx5dv_create_qp(ibv_context* ctx, ibv_qp_init_attr_ex* attr, mlx5dv_qp_init_attr* mlx5_attr) {
  SIGMATRACE_REAL_OR(mlx5dv_create_qp, ibv_qp* (*)(ibv_context*, ibv_qp_init_attr_ex*, mlx5dv_qp_init_attr*), nullptr);
  ibv_qp* qp = fn(ctx, attr, mlx5_attr);
  if (!mlx5::tracing(guard)) return qp;
  ErrnoKeeper keep;
  if (!qp) {
    ibv::record_error(IbvCall::create_qp, reinterpret_cast<uintptr_t>(ctx), keep.saved);
    return qp;
  }
  ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : qp->pd;
  uint64_t type = attr->qp_type;
  if (mlx5_attr && (mlx5_attr->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC))  // a DC target or initiator
    type = mlx5_attr->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT ? sigmatrace::format::kQpTypeDcTarget : sigmatrace::format::kQpTypeDcInitiator;
  ibv::on_qp_created(qp, pd, attr->cap, static_cast<uint32_t>(type), attr->send_cq, attr->recv_cq, attr->srq,
                     (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0);
  return qp;
}

SIGMATRACE_EXPORT ibv_cq_ex* mlx5dv_create_cq(ibv_context* ctx, ibv_cq_init_attr_ex* attr, mlx5dv_cq_init_attr* mlx5_attr) {
  SIGMATRACE_REAL_OR(mlx5dv_create_cq, ibv_cq_ex* (*)(ibv_context*, ibv_cq_init_attr_ex*, mlx5dv_cq_init_attr*), nullptr);
  ibv_cq_ex* cq = fn(ctx, attr, mlx5_attr);
  if (!mlx5::tracing(guard)) return cq;
  ErrnoKeeper keep;
  if (!cq) ibv::record_error(IbvCall::create_cq, reinterpret_cast<uintptr_t>(ctx), keep.saved);
  else ibv::on_cq_ex_created(ctx, cq, static_cast<int>(attr->cqe), attr->wc_flags);
  return cq;
}

namespace sigmatrace::profiler {
namespace {
const InterposedSymbol kMlx5dvSymbols[] = {
#define SIGMATRACE_INTERPOSED(name) {&mlx5::real::name, reinterpret_cast<void*>(&::name), &mlx5::g_active},
    SIGMATRACE_MLX5DV_SYMBOLS(SIGMATRACE_INTERPOSED)
#undef SIGMATRACE_INTERPOSED
};
}  // namespace
extern const InterposedSymbolTable kMlx5dvInterposedSymbols = {kMlx5dvSymbols, sizeof kMlx5dvSymbols / sizeof kMlx5dvSymbols[0]};
}  // namespace sigmatrace::profiler
