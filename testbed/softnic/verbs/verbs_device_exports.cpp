// Exported device-level verbs: device list, open/close, queries (device, port, GID, pkey),
// async events, fork control, and the sysfs helpers (answered for emulated devices).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/config.hpp"
#include "core/context.hpp"
#include "core/exports.hpp"
#include "core/sysfs_tree.hpp"
#include "engine/engine.hpp"
#include "verbs/verbs_datapath.hpp"

using namespace softnic;

// verbs.h wraps these names in macros for its inline fast paths; we define the real symbols.
#undef ibv_get_device_list
#undef ibv_query_port

namespace softnic {
// Provided by verbs_resource_exports.cpp and verbs_qp_exports.cpp for the verbs_context extension
// table.
ibv_qp* create_qp_ex_op(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
ibv_pd* alloc_parent_domain_op(ibv_context* ctx, ibv_parent_domain_init_attr* attr);
ibv_cq_ex* create_cq_ex_op(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
ibv_srq* create_srq_ex_op(ibv_context* ctx, ibv_srq_init_attr_ex* attr);
}  // namespace softnic

namespace {
int query_port_op(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (port < 1 || port > kPortCount) return EINVAL;
  ibv_port_attr full;
  fill_port_attr(to_ctx(ctx)->dev, &full);
  memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
  return 0;
}

int query_device_ex_op(ibv_context* ctx, const ibv_query_device_ex_input* input,
                       ibv_device_attr_ex* attr, size_t size) {
  if (input && input->comp_mask) return EINVAL;
  if (size < sizeof(ibv_device_attr)) return EINVAL;
  fill_device_attr_ex(to_ctx(ctx)->dev, attr, size);
  return 0;
}
}  // namespace

SOFTNIC_EXPORT ibv_device** ibv_get_device_list(int* num) {
  const auto& devs = devices();
  auto** list = static_cast<ibv_device**>(calloc(devs.size() + 1, sizeof(ibv_device*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < devs.size(); ++i) list[i] = &devs[i]->ibdev;
  if (num) *num = int(devs.size());
  return list;
}

SOFTNIC_EXPORT void ibv_free_device_list(ibv_device** list) { free(list); }

SOFTNIC_EXPORT const char* ibv_get_device_name(ibv_device* dev) { return dev->name; }

SOFTNIC_EXPORT __be64 ibv_get_device_guid(ibv_device* dev) {
  Device* d = to_device(dev);
  return d ? htobe64(d->node_guid) : 0;
}

SOFTNIC_EXPORT int ibv_get_device_index(ibv_device* dev) {
  Device* d = to_device(dev);
  return d ? d->index : -1;
}

SOFTNIC_EXPORT ibv_context* ibv_open_device(ibv_device* dev) {
  Device* d = to_device(dev);
  if (!d) {
    errno = ENODEV;
    return nullptr;
  }
  if (!Engine::get().ensure_started()) return nullptr;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* c = new Context();
  memset(&c->vctx, 0, sizeof(c->vctx));
  c->dev = d;
  c->async_write_fd = fds[1];
  verbs_context& v = c->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = query_port_op;
  v.query_device_ex = query_device_ex_op;
  v.create_qp_ex = create_qp_ex_op;
  v.create_cq_ex = create_cq_ex_op;
  v.create_srq_ex = create_srq_ex_op;
  v.alloc_parent_domain = alloc_parent_domain_op;
  ibv_context& ctx = v.context;
  ctx.device = dev;
  ctx.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);  // some callers fstat/poll it
  ctx.async_fd = fds[0];
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);  // marks a verbs_context
  install_context_ops(c);
  SOFTNIC_LOG("opened %s", dev->name);
  return &ctx;
}

SOFTNIC_EXPORT int ibv_close_device(ibv_context* ibctx) {
  Context* c = to_ctx(ibctx);
  close(ibctx->async_fd);
  close(c->async_write_fd);
  if (ibctx->cmd_fd >= 0) close(ibctx->cmd_fd);
  pthread_mutex_destroy(&ibctx->mutex);
  delete c;
  return 0;
}

SOFTNIC_EXPORT ibv_context* ibv_import_device(int) {
  errno = EOPNOTSUPP;  // no kernel command FD to share
  return nullptr;
}

SOFTNIC_EXPORT int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  fill_device_attr(to_ctx(ctx)->dev, attr);
  return 0;
}

// Exported entry for callers without the verbs_context fast path (compat layout prefix).
SOFTNIC_EXPORT int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
  return query_port_op(ctx, port, reinterpret_cast<ibv_port_attr*>(attr),
                       offsetof(ibv_port_attr, port_cap_flags2));
}

SOFTNIC_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (port < 1 || port > kPortCount || index != 0) {
    errno = EINVAL;
    return -1;
  }
  device_gid(to_ctx(ctx)->dev, gid);
  return 0;
}

SOFTNIC_EXPORT int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index,
                                     ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  if (flags || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  if (port < 1 || port > uint32_t(kPortCount)) return EINVAL;
  if (index != 0) return ENODATA;
  memset(entry, 0, sizeof(*entry));
  device_gid(to_ctx(ctx)->dev, &entry->gid);
  entry->gid_index = 0;
  entry->port_num = port;
  entry->gid_type = IBV_GID_TYPE_IB;
  entry->ndev_ifindex = 0;
  return 0;
}

SOFTNIC_EXPORT ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries,
                                            size_t max_entries, uint32_t flags, size_t entry_size) {
  if (flags || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < size_t(kPortCount)) return -EINVAL;
  for (int p = 1; p <= kPortCount; ++p)
    _ibv_query_gid_ex(ctx, uint32_t(p), 0, &entries[p - 1], 0, sizeof(ibv_gid_entry));
  return kPortCount;
}

// Private rdma-core ABI used by ibv_devinfo: sysfs GID type (0: IB/RoCE v1, 1: RoCE v2).
SOFTNIC_EXPORT int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index,
                                      int* type) {
  if (port < 1 || port > kPortCount || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *type = 0;
  return 0;
}

SOFTNIC_EXPORT int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
  if (port < 1 || port > kPortCount || index < 0 || index >= 128) {
    errno = EINVAL;
    return -1;
  }
  *pkey = index == 0 ? htobe16(kPkeyDefault) : 0;
  return 0;
}

SOFTNIC_EXPORT int ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey) {
  if (port < 1 || port > kPortCount) return -EINVAL;
  // Full and limited membership of the default partition both live at index 0.
  if ((be16toh(pkey) & 0x7fff) == 0x7fff) return 0;
  return -ENOENT;
}

SOFTNIC_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
  Context* c = to_ctx(ctx);
  char b;
  ssize_t r = read(ctx->async_fd, &b, 1);  // blocks unless the caller made it non-blocking
  if (r != 1) return -1;
  std::lock_guard<std::mutex> g(c->async_mu);
  if (c->async_events.empty()) {
    errno = EAGAIN;
    return -1;
  }
  *event = c->async_events.front();
  c->async_events.pop_front();
  return 0;
}

SOFTNIC_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
  // Count acknowledgements so destroy calls of the affected objects see them.
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
      ibv_cq* cq = event->element.cq;
      pthread_mutex_lock(&cq->mutex);
      cq->async_events_completed++;
      pthread_cond_signal(&cq->cond);
      pthread_mutex_unlock(&cq->mutex);
      break;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      ibv_srq* srq = event->element.srq;
      pthread_mutex_lock(&srq->mutex);
      srq->events_completed++;
      pthread_cond_signal(&srq->cond);
      pthread_mutex_unlock(&srq->mutex);
      break;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
      ibv_qp* qp = event->element.qp;
      pthread_mutex_lock(&qp->mutex);
      qp->events_completed++;
      pthread_cond_signal(&qp->cond);
      pthread_mutex_unlock(&qp->mutex);
      break;
    }
    default:
      break;
  }
}

// Memory is never pinned by softnic, so fork() needs no protection.
SOFTNIC_EXPORT int ibv_fork_init(void) { return 0; }
SOFTNIC_EXPORT ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
SOFTNIC_EXPORT int ibv_dontfork_range(void*, size_t) { return 0; }
SOFTNIC_EXPORT int ibv_dofork_range(void*, size_t) { return 0; }

SOFTNIC_EXPORT const char* ibv_get_sysfs_path(void) {
  static char path[256] = {};
  if (!path[0]) {
    const char* env = getenv("SYSFS_PATH");
    snprintf(path, sizeof(path), "%s", env && *env ? env : "/sys");
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = 0;
  }
  return path;
}

SOFTNIC_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (size == 0) return -1;
  if (sysfs_attribute(dir, file, buf, size)) {
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '\n') buf[--n] = 0;
    return int(n);
  }
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size);
  close(fd);
  if (n <= 0) return -1;
  if (size_t(n) == size) n--;
  buf[n] = 0;
  if (n && buf[n - 1] == '\n') buf[--n] = 0;
  return int(n);
}
