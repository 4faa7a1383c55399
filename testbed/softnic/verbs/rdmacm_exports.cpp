// librdmacm.so.1 replacement. The real librdmacm needs the kernel RDMA CM (/dev/infiniband/rdma_cm
// and netlink), which this machine does not have, so every connection-manager and rsocket call
// fails cleanly with ENODEV instead of pretending to connect.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include <cerrno>

#include "core/exports.hpp"

namespace {
template <class T>
T fail(T v) {
  errno = ENODEV;
  return v;
}
}  // namespace

SOFTNIC_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rclose(int socket) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT struct rdma_event_channel * rdma_create_event_channel(void) {
  return fail<struct rdma_event_channel *>(nullptr);
}

SOFTNIC_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context, enum rdma_port_space ps) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id) {
  errno = ENODEV;
}

SOFTNIC_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel) {
  errno = ENODEV;
}

SOFTNIC_EXPORT int rdma_destroy_id(struct rdma_cm_id *id) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id) {
  errno = ENODEV;
}

SOFTNIC_EXPORT int rdma_disconnect(struct rdma_cm_id *id) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT const char* rdma_event_str(enum rdma_cm_event_type event) {
  static const char* const s[] = {"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
      "RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST",
      "RDMA_CM_EVENT_CONNECT_RESPONSE", "RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
      "RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED",
      "RDMA_CM_EVENT_DEVICE_REMOVAL", "RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
      "RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
  return unsigned(event) < sizeof(s) / sizeof(s[0]) ? s[event] : "UNKNOWN EVENT";
}

SOFTNIC_EXPORT void rdma_free_devices(struct ibv_context **list) {
  errno = ENODEV;
}

SOFTNIC_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res) {
  errno = ENODEV;
}

SOFTNIC_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT struct ibv_context ** rdma_get_devices(int *num_devices) {
  return fail<struct ibv_context **>(nullptr);
}

SOFTNIC_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id) {
  return 0;  // no port: the id can never be bound
}

SOFTNIC_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id) {
  return 0;  // no port: the id can never be bound
}

SOFTNIC_EXPORT int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints, struct rdma_addrinfo **res) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr, int timeout_ms) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rfcntl(int socket, int cmd, ...) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset) {
  return fail<off_t>(-1);
}

SOFTNIC_EXPORT int riounmap(int socket, void *buf, size_t len) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags) {
  return fail<size_t>(-1);
}

SOFTNIC_EXPORT int rlisten(int socket, int backlog) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT ssize_t rread(int socket, void *buf, size_t count) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr, socklen_t *addrlen) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags, const struct sockaddr *dest_addr, socklen_t addrlen) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rshutdown(int socket, int how) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rsocket(int domain, int type, int protocol) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt) {
  return fail<ssize_t>(-1);
}

SOFTNIC_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_establish(struct rdma_cm_id *id) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr) {
  return fail<int>(-1);
}

SOFTNIC_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id) {
  errno = ENODEV;
}
