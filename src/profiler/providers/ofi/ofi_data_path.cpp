// The ofi provider's data path (see ofi_provider.cpp): the wrappers of the endpoint's message,
// tagged, RMA and atomic operations and of the completion queue's reads, which run on application
// threads: no locks, no system calls, no allocation.
#include "profiler/providers/ofi/ofi_internal.h"

namespace sigmatrace::profiler::ofi {

namespace {

// ---- data path: one operation returned ---------------------------------------------------------------

// tag_ignore: a tagged receive's ignore mask (the bits of the tag that need not match).
[[gnu::always_inline]] inline void op_done(OfiOp op, const fid_ep* ep, uint64_t bytes, fi_addr_t peer, uint64_t tag, uint64_t raddr,
                                           const void* context, ssize_t r, uint64_t tag_ignore = 0) {
  if (r == -kFiEagain || !active()) return;
  if (g_mode == TraceMode::aggregate) {
    if (r == 0) aggregate_add(AggregateKey::ofi_ep_op, addr(ep), static_cast<uint64_t>(op), bytes);
  } else {
    record<EventType::ofi_op>(static_cast<uint64_t>(op), addr(ep), bytes, peer, tag, raddr, addr(context), int64_t{r}, tag_ignore);
  }
  if (__builtin_expect(r < 0, 0)) call_error(op, ep, r);
}

inline uint64_t ioc_bytes(const fi_ioc* ioc, size_t n, int dt) {
  uint64_t b = 0;
  for (size_t i = 0; ioc && i < n; ++i) b += ioc[i].count;
  return b * datatype_bytes(dt);
}

// msg
ssize_t msg_recv(fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, void* ctx) {
  ssize_t r = wrapped(ep->msg).real->recv(ep, buf, len, desc, src, ctx);
  op_done(OfiOp::recv, ep, len, src, 0, 0, ctx, r);
  return r;
}
ssize_t msg_recvv(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t src, void* ctx) {
  ssize_t r = wrapped(ep->msg).real->recvv(ep, iov, desc, count, src, ctx);
  op_done(OfiOp::recvv, ep, iov_bytes(iov, count), src, 0, 0, ctx, r);
  return r;
}
ssize_t msg_recvmsg(fid_ep* ep, const fi_msg* m, uint64_t flags) {
  ssize_t r = wrapped(ep->msg).real->recvmsg(ep, m, flags);
  op_done(OfiOp::recvmsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, 0, m->context, r);
  return r;
}
ssize_t msg_send(fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest, void* ctx) {
  ssize_t r = wrapped(ep->msg).real->send(ep, buf, len, desc, dest, ctx);
  op_done(OfiOp::send, ep, len, dest, 0, 0, ctx, r);
  return r;
}
ssize_t msg_sendv(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t dest, void* ctx) {
  ssize_t r = wrapped(ep->msg).real->sendv(ep, iov, desc, count, dest, ctx);
  op_done(OfiOp::sendv, ep, iov_bytes(iov, count), dest, 0, 0, ctx, r);
  return r;
}
ssize_t msg_sendmsg(fid_ep* ep, const fi_msg* m, uint64_t flags) {
  ssize_t r = wrapped(ep->msg).real->sendmsg(ep, m, flags);
  op_done(OfiOp::sendmsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, 0, m->context, r);
  return r;
}
ssize_t msg_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest) {
  ssize_t r = wrapped(ep->msg).real->inject(ep, buf, len, dest);
  op_done(OfiOp::inject, ep, len, dest, 0, 0, nullptr, r);
  return r;
}
ssize_t msg_senddata(fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t dest, void* ctx) {
  ssize_t r = wrapped(ep->msg).real->senddata(ep, buf, len, desc, data, dest, ctx);
  op_done(OfiOp::senddata, ep, len, dest, 0, 0, ctx, r);
  return r;
}
ssize_t msg_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  ssize_t r = wrapped(ep->msg).real->injectdata(ep, buf, len, data, dest);
  op_done(OfiOp::injectdata, ep, len, dest, 0, 0, nullptr, r);
  return r;
}
}  // namespace

void fill_msg(fi_ops_msg& c, const fi_ops_msg& r) {
  WRAP_ENTRY(c, r, fi_ops_msg, recv, msg_recv)
  WRAP_ENTRY(c, r, fi_ops_msg, recvv, msg_recvv)
  WRAP_ENTRY(c, r, fi_ops_msg, recvmsg, msg_recvmsg)
  WRAP_ENTRY(c, r, fi_ops_msg, send, msg_send)
  WRAP_ENTRY(c, r, fi_ops_msg, sendv, msg_sendv)
  WRAP_ENTRY(c, r, fi_ops_msg, sendmsg, msg_sendmsg)
  WRAP_ENTRY(c, r, fi_ops_msg, inject, msg_inject)
  WRAP_ENTRY(c, r, fi_ops_msg, senddata, msg_senddata)
  WRAP_ENTRY(c, r, fi_ops_msg, injectdata, msg_injectdata)
}

namespace {

// tagged: tag holds the tag; receives record their ignore mask in tag_ignore
ssize_t tag_recv(fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag, uint64_t ignore, void* ctx) {
  ssize_t r = wrapped(ep->tagged).real->recv(ep, buf, len, desc, src, tag, ignore, ctx);
  op_done(OfiOp::trecv, ep, len, src, tag, 0, ctx, r, ignore);
  return r;
}
ssize_t tag_recvv(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void* ctx) {
  ssize_t r = wrapped(ep->tagged).real->recvv(ep, iov, desc, count, src, tag, ignore, ctx);
  op_done(OfiOp::trecvv, ep, iov_bytes(iov, count), src, tag, 0, ctx, r, ignore);
  return r;
}
ssize_t tag_recvmsg(fid_ep* ep, const fi_msg_tagged* m, uint64_t flags) {
  ssize_t r = wrapped(ep->tagged).real->recvmsg(ep, m, flags);
  op_done(OfiOp::trecvmsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, m->tag, 0, m->context, r, m->ignore);
  return r;
}
ssize_t tag_send(fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t tag, void* ctx) {
  ssize_t r = wrapped(ep->tagged).real->send(ep, buf, len, desc, dest, tag, ctx);
  op_done(OfiOp::tsend, ep, len, dest, tag, 0, ctx, r);
  return r;
}
ssize_t tag_sendv(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t dest, uint64_t tag, void* ctx) {
  ssize_t r = wrapped(ep->tagged).real->sendv(ep, iov, desc, count, dest, tag, ctx);
  op_done(OfiOp::tsendv, ep, iov_bytes(iov, count), dest, tag, 0, ctx, r);
  return r;
}
ssize_t tag_sendmsg(fid_ep* ep, const fi_msg_tagged* m, uint64_t flags) {
  ssize_t r = wrapped(ep->tagged).real->sendmsg(ep, m, flags);
  op_done(OfiOp::tsendmsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, m->tag, 0, m->context, r);
  return r;
}
ssize_t tag_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  ssize_t r = wrapped(ep->tagged).real->inject(ep, buf, len, dest, tag);
  op_done(OfiOp::tinject, ep, len, dest, tag, 0, nullptr, r);
  return r;
}
ssize_t tag_senddata(fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t dest, uint64_t tag, void* ctx) {
  ssize_t r = wrapped(ep->tagged).real->senddata(ep, buf, len, desc, data, dest, tag, ctx);
  op_done(OfiOp::tsenddata, ep, len, dest, tag, 0, ctx, r);
  return r;
}
ssize_t tag_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t tag) {
  ssize_t r = wrapped(ep->tagged).real->injectdata(ep, buf, len, data, dest, tag);
  op_done(OfiOp::tinjectdata, ep, len, dest, tag, 0, nullptr, r);
  return r;
}
}  // namespace

void fill_tagged(fi_ops_tagged& c, const fi_ops_tagged& r) {
  WRAP_ENTRY(c, r, fi_ops_tagged, recv, tag_recv)
  WRAP_ENTRY(c, r, fi_ops_tagged, recvv, tag_recvv)
  WRAP_ENTRY(c, r, fi_ops_tagged, recvmsg, tag_recvmsg)
  WRAP_ENTRY(c, r, fi_ops_tagged, send, tag_send)
  WRAP_ENTRY(c, r, fi_ops_tagged, sendv, tag_sendv)
  WRAP_ENTRY(c, r, fi_ops_tagged, sendmsg, tag_sendmsg)
  WRAP_ENTRY(c, r, fi_ops_tagged, inject, tag_inject)
  WRAP_ENTRY(c, r, fi_ops_tagged, senddata, tag_senddata)
  WRAP_ENTRY(c, r, fi_ops_tagged, injectdata, tag_injectdata)
}

namespace {

// rma: remote_addr holds the target address; the key is not kept
ssize_t rma_read(fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t a, uint64_t key, void* ctx) {
  ssize_t r = wrapped(ep->rma).real->read(ep, buf, len, desc, src, a, key, ctx);
  op_done(OfiOp::read, ep, len, src, 0, a, ctx, r);
  return r;
}
ssize_t rma_readv(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t src, uint64_t a, uint64_t key, void* ctx) {
  ssize_t r = wrapped(ep->rma).real->readv(ep, iov, desc, count, src, a, key, ctx);
  op_done(OfiOp::readv, ep, iov_bytes(iov, count), src, 0, a, ctx, r);
  return r;
}
ssize_t rma_readmsg(fid_ep* ep, const fi_msg_rma* m, uint64_t flags) {
  ssize_t r = wrapped(ep->rma).real->readmsg(ep, m, flags);
  op_done(OfiOp::readmsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, m->rma_iov_count ? m->rma_iov[0].addr : 0,
          m->context, r);
  return r;
}
ssize_t rma_write(fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t a, uint64_t key, void* ctx) {
  ssize_t r = wrapped(ep->rma).real->write(ep, buf, len, desc, dest, a, key, ctx);
  op_done(OfiOp::write, ep, len, dest, 0, a, ctx, r);
  return r;
}
ssize_t rma_writev(fid_ep* ep, const iovec* iov, void** desc, size_t count, fi_addr_t dest, uint64_t a, uint64_t key, void* ctx) {
  ssize_t r = wrapped(ep->rma).real->writev(ep, iov, desc, count, dest, a, key, ctx);
  op_done(OfiOp::writev, ep, iov_bytes(iov, count), dest, 0, a, ctx, r);
  return r;
}
ssize_t rma_writemsg(fid_ep* ep, const fi_msg_rma* m, uint64_t flags) {
  ssize_t r = wrapped(ep->rma).real->writemsg(ep, m, flags);
  op_done(OfiOp::writemsg, ep, iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, m->rma_iov_count ? m->rma_iov[0].addr : 0,
          m->context, r);
  return r;
}
ssize_t rma_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t a, uint64_t key) {
  ssize_t r = wrapped(ep->rma).real->inject(ep, buf, len, dest, a, key);
  op_done(OfiOp::inject_write, ep, len, dest, 0, a, nullptr, r);
  return r;
}
ssize_t rma_writedata(fid_ep* ep, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t dest, uint64_t a, uint64_t key,
                      void* ctx) {
  ssize_t r = wrapped(ep->rma).real->writedata(ep, buf, len, desc, data, dest, a, key, ctx);
  op_done(OfiOp::writedata, ep, len, dest, 0, a, ctx, r);
  return r;
}
ssize_t rma_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t a, uint64_t key) {
  ssize_t r = wrapped(ep->rma).real->injectdata(ep, buf, len, data, dest, a, key);
  op_done(OfiOp::inject_writedata, ep, len, dest, 0, a, nullptr, r);
  return r;
}
}  // namespace

void fill_rma(fi_ops_rma& c, const fi_ops_rma& r) {
  WRAP_ENTRY(c, r, fi_ops_rma, read, rma_read)
  WRAP_ENTRY(c, r, fi_ops_rma, readv, rma_readv)
  WRAP_ENTRY(c, r, fi_ops_rma, readmsg, rma_readmsg)
  WRAP_ENTRY(c, r, fi_ops_rma, write, rma_write)
  WRAP_ENTRY(c, r, fi_ops_rma, writev, rma_writev)
  WRAP_ENTRY(c, r, fi_ops_rma, writemsg, rma_writemsg)
  WRAP_ENTRY(c, r, fi_ops_rma, inject, rma_inject)
  WRAP_ENTRY(c, r, fi_ops_rma, writedata, rma_writedata)
  WRAP_ENTRY(c, r, fi_ops_rma, injectdata, rma_injectdata)
}

namespace {

// atomic: tag holds (op << 8 | datatype)
inline uint64_t atomic_kind(int dt, int op) { return (static_cast<uint64_t>(op) << 8) | static_cast<uint64_t>(dt & 0xff); }
ssize_t at_write(fid_ep* ep, const void* buf, size_t count, void* desc, fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op,
                 void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->write(ep, buf, count, desc, dest, a, key, dt, op, ctx);
  op_done(OfiOp::atomic, ep, count * datatype_bytes(dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_writev(fid_ep* ep, const fi_ioc* iov, void** desc, size_t count, fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op,
                  void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->writev(ep, iov, desc, count, dest, a, key, dt, op, ctx);
  op_done(OfiOp::atomicv, ep, ioc_bytes(iov, count, dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_writemsg(fid_ep* ep, const fi_msg_atomic* m, uint64_t flags) {
  ssize_t r = wrapped(ep->atomic).real->writemsg(ep, m, flags);
  op_done(OfiOp::atomicmsg, ep, ioc_bytes(m->msg_iov, m->iov_count, m->datatype), m->addr, atomic_kind(m->datatype, m->op),
          m->rma_iov_count ? m->rma_iov[0].addr : 0, m->context, r);
  return r;
}
ssize_t at_inject(fid_ep* ep, const void* buf, size_t count, fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op) {
  ssize_t r = wrapped(ep->atomic).real->inject(ep, buf, count, dest, a, key, dt, op);
  op_done(OfiOp::inject_atomic, ep, count * datatype_bytes(dt), dest, atomic_kind(dt, op), a, nullptr, r);
  return r;
}
ssize_t at_readwrite(fid_ep* ep, const void* buf, size_t count, void* desc, void* res, void* res_desc, fi_addr_t dest, uint64_t a,
                     uint64_t key, int dt, int op, void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->readwrite(ep, buf, count, desc, res, res_desc, dest, a, key, dt, op, ctx);
  op_done(OfiOp::fetch_atomic, ep, count * datatype_bytes(dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_readwritev(fid_ep* ep, const fi_ioc* iov, void** desc, size_t count, fi_ioc* resv, void** res_desc, size_t res_count,
                      fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op, void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->readwritev(ep, iov, desc, count, resv, res_desc, res_count, dest, a, key, dt, op, ctx);
  op_done(OfiOp::fetch_atomicv, ep, ioc_bytes(iov, count, dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_readwritemsg(fid_ep* ep, const fi_msg_atomic* m, fi_ioc* resv, void** res_desc, size_t res_count, uint64_t flags) {
  ssize_t r = wrapped(ep->atomic).real->readwritemsg(ep, m, resv, res_desc, res_count, flags);
  op_done(OfiOp::fetch_atomicmsg, ep, ioc_bytes(m->msg_iov, m->iov_count, m->datatype), m->addr, atomic_kind(m->datatype, m->op),
          m->rma_iov_count ? m->rma_iov[0].addr : 0, m->context, r);
  return r;
}
ssize_t at_compwrite(fid_ep* ep, const void* buf, size_t count, void* desc, const void* cmp, void* cmp_desc, void* res,
                     void* res_desc, fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op, void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->compwrite(ep, buf, count, desc, cmp, cmp_desc, res, res_desc, dest, a, key, dt, op, ctx);
  op_done(OfiOp::compare_atomic, ep, count * datatype_bytes(dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_compwritev(fid_ep* ep, const fi_ioc* iov, void** desc, size_t count, const fi_ioc* cmpv, void** cmp_desc, size_t cmp_count,
                      fi_ioc* resv, void** res_desc, size_t res_count, fi_addr_t dest, uint64_t a, uint64_t key, int dt, int op,
                      void* ctx) {
  ssize_t r = wrapped(ep->atomic).real->compwritev(ep, iov, desc, count, cmpv, cmp_desc, cmp_count, resv, res_desc, res_count, dest,
                                                    a, key, dt, op, ctx);
  op_done(OfiOp::compare_atomicv, ep, ioc_bytes(iov, count, dt), dest, atomic_kind(dt, op), a, ctx, r);
  return r;
}
ssize_t at_compwritemsg(fid_ep* ep, const fi_msg_atomic* m, const fi_ioc* cmpv, void** cmp_desc, size_t cmp_count, fi_ioc* resv,
                        void** res_desc, size_t res_count, uint64_t flags) {
  ssize_t r = wrapped(ep->atomic).real->compwritemsg(ep, m, cmpv, cmp_desc, cmp_count, resv, res_desc, res_count, flags);
  op_done(OfiOp::compare_atomicmsg, ep, ioc_bytes(m->msg_iov, m->iov_count, m->datatype), m->addr, atomic_kind(m->datatype, m->op),
          m->rma_iov_count ? m->rma_iov[0].addr : 0, m->context, r);
  return r;
}
}  // namespace

void fill_atomic(fi_ops_atomic& c, const fi_ops_atomic& r) {
  WRAP_ENTRY(c, r, fi_ops_atomic, write, at_write)
  WRAP_ENTRY(c, r, fi_ops_atomic, writev, at_writev)
  WRAP_ENTRY(c, r, fi_ops_atomic, writemsg, at_writemsg)
  WRAP_ENTRY(c, r, fi_ops_atomic, inject, at_inject)
  WRAP_ENTRY(c, r, fi_ops_atomic, readwrite, at_readwrite)
  WRAP_ENTRY(c, r, fi_ops_atomic, readwritev, at_readwritev)
  WRAP_ENTRY(c, r, fi_ops_atomic, readwritemsg, at_readwritemsg)
  WRAP_ENTRY(c, r, fi_ops_atomic, compwrite, at_compwrite)
  WRAP_ENTRY(c, r, fi_ops_atomic, compwritev, at_compwritev)
  WRAP_ENTRY(c, r, fi_ops_atomic, compwritemsg, at_compwritemsg)
}

namespace {

// ---- completion queues ---------------------------------------------------------------------------------

[[gnu::always_inline]] inline void completions(const fid_cq* cq, const void* buf, ssize_t n, const fi_addr_t* src) {
  if (n <= 0 || !active()) return;
  if (g_mode == TraceMode::aggregate) {
    aggregate_add(AggregateKey::ofi_ep_op, addr(cq), static_cast<uint64_t>(OfiOp::cq_read), static_cast<uint64_t>(n));
    return;
  }
  if (g_mode == TraceMode::simple) {
    record<EventType::ofi_cq_read>(addr(cq), static_cast<uint64_t>(n));
    return;
  }
  const int format = wrapped(cq->ops).extra;
  const size_t stride = cq_entry_bytes(format);
  const auto* p = static_cast<const uint8_t*>(buf);
  for (ssize_t i = 0; i < n; ++i, p += stride) {
    fi_cq_tagged_entry e{};
    std::memcpy(&e, p, stride);
    record<EventType::ofi_completion>(addr(cq), addr(e.op_context), e.flags, uint64_t{e.len}, e.tag, src ? src[i] : ~uint64_t{0});
  }
}

ssize_t cq_read(fid_cq* cq, void* buf, size_t count) {
  ssize_t n = wrapped(cq->ops).real->read(cq, buf, count);
  completions(cq, buf, n, nullptr);
  return n;
}
ssize_t cq_readfrom(fid_cq* cq, void* buf, size_t count, fi_addr_t* src) {
  ssize_t n = wrapped(cq->ops).real->readfrom(cq, buf, count, src);
  completions(cq, buf, n, src);
  return n;
}
ssize_t cq_sread(fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  ssize_t n = wrapped(cq->ops).real->sread(cq, buf, count, cond, timeout);
  completions(cq, buf, n, nullptr);
  return n;
}
ssize_t cq_sreadfrom(fid_cq* cq, void* buf, size_t count, fi_addr_t* src, const void* cond, int timeout) {
  ssize_t n = wrapped(cq->ops).real->sreadfrom(cq, buf, count, src, cond, timeout);
  completions(cq, buf, n, src);
  return n;
}
// Error completions, in every mode.
ssize_t cq_readerr(fid_cq* cq, void* entry, uint64_t flags) {
  ssize_t n = wrapped(cq->ops).real->readerr(cq, entry, flags);
  if (n > 0 && entry && active()) {
    const auto* e = static_cast<const fi_cq_err_entry*>(entry);
    record<EventType::ofi_completion_error>(addr(cq), addr(e->op_context), e->flags, int64_t{e->err}, int64_t{e->prov_errno});
  }
  return n;
}
}  // namespace

void fill_cq(fi_ops_cq& c, const fi_ops_cq& r) {
  WRAP_ENTRY(c, r, fi_ops_cq, read, cq_read)
  WRAP_ENTRY(c, r, fi_ops_cq, readfrom, cq_readfrom)
  WRAP_ENTRY(c, r, fi_ops_cq, readerr, cq_readerr)
  WRAP_ENTRY(c, r, fi_ops_cq, sread, cq_sread)
  WRAP_ENTRY(c, r, fi_ops_cq, sreadfrom, cq_sreadfrom)
}

}  // namespace sigmatrace::profiler::ofi
