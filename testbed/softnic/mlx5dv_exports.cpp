// libmlx5.so.1 replacement. Until devx/UAR emulation lands, softnic is not an mlx5dv device:
// mlx5dv_is_supported() answers false, mlx5dv_query_device() answers with no optional
// capabilities, and every direct-verbs object call fails with EOPNOTSUPP, so libraries take
// their plain-verbs paths.
#include <infiniband/mlx5dv.h>

#include <cerrno>

#include "exports.hpp"

SOFTNIC_EXPORT bool mlx5dv_is_supported(ibv_device*) { return false; }

SOFTNIC_EXPORT int mlx5dv_query_device(ibv_context*, mlx5dv_context* attrs) {
  attrs->version = 1;
  attrs->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
  attrs->comp_mask = 0;  // none of the optional capability blocks is filled in
  return 0;
}

extern "C" __attribute__((visibility("default"))) int softnic_mlx5dv_init_obj(mlx5dv_obj*, uint64_t) {
  return EOPNOTSUPP;
}
extern "C" __attribute__((visibility("default"))) int softnic_mlx5dv_init_obj_1_0(mlx5dv_obj*, uint64_t) {
  return EOPNOTSUPP;
}
// mlx5dv_init_obj exists in two versions in rdma-core; both must be present.
__asm__(".symver softnic_mlx5dv_init_obj,mlx5dv_init_obj@@MLX5_1.2");
__asm__(".symver softnic_mlx5dv_init_obj_1_0,mlx5dv_init_obj@MLX5_1.0");

SOFTNIC_EXPORT ibv_context* mlx5dv_open_device(ibv_device*, mlx5dv_context_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

SOFTNIC_EXPORT ibv_qp* mlx5dv_create_qp(ibv_context*, ibv_qp_init_attr_ex*, mlx5dv_qp_init_attr*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

SOFTNIC_EXPORT mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_ex*) {
  errno = EOPNOTSUPP;
  return nullptr;
}

SOFTNIC_EXPORT int mlx5dv_devx_general_cmd(ibv_context*, const void*, size_t, void*, size_t) {
  return EOPNOTSUPP;
}

SOFTNIC_EXPORT mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context*, const void*, size_t, void*, size_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT int mlx5dv_devx_obj_query(mlx5dv_devx_obj*, const void*, size_t, void*, size_t) {
  return EOPNOTSUPP;
}
SOFTNIC_EXPORT int mlx5dv_devx_obj_modify(mlx5dv_devx_obj*, const void*, size_t, void*, size_t) {
  return EOPNOTSUPP;
}
SOFTNIC_EXPORT int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj*) { return EOPNOTSUPP; }

SOFTNIC_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg(ibv_context*, void*, size_t, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT mlx5dv_devx_umem* mlx5dv_devx_umem_reg_ex(ibv_context*, mlx5dv_devx_umem_in*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem*) { return EOPNOTSUPP; }

SOFTNIC_EXPORT mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT void mlx5dv_devx_free_uar(mlx5dv_devx_uar*) {}

SOFTNIC_EXPORT int mlx5dv_devx_query_eqn(ibv_context*, uint32_t, uint32_t*) { return EOPNOTSUPP; }

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
