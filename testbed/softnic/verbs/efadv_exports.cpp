// libefa.so.1 replacement: perftest links it, but softnic devices are not EFA devices, so
// every efadv call fails with EOPNOTSUPP.
#include <infiniband/efadv.h>

#include <cerrno>

#include "core/exports.hpp"

SOFTNIC_EXPORT ibv_qp* efadv_create_driver_qp(ibv_pd*, ibv_qp_init_attr*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT ibv_qp* efadv_create_qp_ex(ibv_context*, ibv_qp_init_attr_ex*, efadv_qp_init_attr*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT int efadv_query_device(ibv_context*, efadv_device_attr*, uint32_t) { return EOPNOTSUPP; }
SOFTNIC_EXPORT int efadv_query_ah(ibv_ah*, efadv_ah_attr*, uint32_t) { return EOPNOTSUPP; }
SOFTNIC_EXPORT ibv_cq_ex* efadv_create_cq(ibv_context*, ibv_cq_init_attr_ex*, efadv_cq_init_attr*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
SOFTNIC_EXPORT efadv_cq* efadv_cq_from_ibv_cq_ex(ibv_cq_ex*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
