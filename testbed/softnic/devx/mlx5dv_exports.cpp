// libmlx5.so.1 replacement. softnic is an mlx5dv device for devx (devx_exports.cpp: UARs,
// umem, PRM commands, WQE execution from doorbells; docs/gda.md): mlx5dv_is_supported()
// answers true and mlx5dv_init_obj() knows PDs, CQs, SRQs and address handles.
// mlx5dv_create_qp makes DC targets (DCTs); mlx5dv_query_device() answers with no optional
// capabilities, and the other direct-verbs object calls (DC initiators through verbs, mkeys,
// crypto) fail with EOPNOTSUPP, so libraries take their plain-verbs or devx paths.
#include <infiniband/mlx5dv.h>

#include <cerrno>

#include "core/exports.hpp"
#include "core/transport_api.hpp"

namespace softnic::devx {
int init_obj(mlx5dv_obj* obj, uint64_t type);  // devx_exports.cpp
}

SOFTNIC_EXPORT bool mlx5dv_is_supported(ibv_device*) { return true; }

SOFTNIC_EXPORT int mlx5dv_query_device(ibv_context*, mlx5dv_context* attrs) {
  attrs->version = 1;
  attrs->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
  attrs->comp_mask = 0;  // none of the optional capability blocks is filled in
  return 0;
}

extern "C" __attribute__((visibility("default"))) int softnic_mlx5dv_init_obj(mlx5dv_obj* obj, uint64_t type) {
  return softnic::devx::init_obj(obj, type);
}
extern "C" __attribute__((visibility("default"))) int softnic_mlx5dv_init_obj_1_0(mlx5dv_obj* obj, uint64_t type) {
  return softnic::devx::init_obj(obj, type);
}
// mlx5dv_init_obj exists in two versions in rdma-core; both must be present.
__asm__(".symver softnic_mlx5dv_init_obj,mlx5dv_init_obj@@MLX5_1.2");
__asm__(".symver softnic_mlx5dv_init_obj_1_0,mlx5dv_init_obj@MLX5_1.0");

SOFTNIC_EXPORT ibv_context* mlx5dv_open_device(ibv_device*, mlx5dv_context_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

// A DCT as NVSHMEM IBGDA makes its targets: an IBV_QPT_DRIVER QP with an SRQ, on a PD or parent
// domain, then INIT and RTR through ibv_modify_qp. Its number is valid from creation on (a
// ConnectX's becomes valid at RTR; callers read it after RTR).
SOFTNIC_EXPORT ibv_qp* mlx5dv_create_qp(ibv_context* ctx, ibv_qp_init_attr_ex* attr, mlx5dv_qp_init_attr* dv) {
  if (!ctx || !attr) {
    errno = EINVAL;
    return nullptr;
  }
  if (dv && dv->comp_mask == MLX5DV_QP_INIT_ATTR_MASK_DC && dv->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT)
    return softnic::transport::create_dct(ctx, attr, dv->dc_init_attr.dct_access_key);
  errno = EOPNOTSUPP;  // DC initiators through verbs and mlx5-specific QP options are not emulated
  return nullptr;
}

SOFTNIC_EXPORT mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_ex*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

SOFTNIC_EXPORT mlx5dv_mkey* mlx5dv_create_mkey(mlx5dv_mkey_init_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT int mlx5dv_destroy_mkey(mlx5dv_mkey*) { return EOPNOTSUPP; }

SOFTNIC_EXPORT int mlx5dv_crypto_login(ibv_context*, mlx5dv_crypto_login_attr*) { return EOPNOTSUPP; }
SOFTNIC_EXPORT mlx5dv_dek* mlx5dv_dek_create(ibv_context*, mlx5dv_dek_init_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT int mlx5dv_dek_destroy(mlx5dv_dek*) { return EOPNOTSUPP; }
