// The "ofi" provider (libfabric). libfabric exports only fi_getinfo/fi_fabric and a few helpers;
// every other call (fi_domain, fi_endpoint, fi_send, fi_cq_read, ...) is a static inline through
// an ops table of the object it is called on. So fi_getinfo and fi_fabric are shimmed, and each
// object opened below a traced fabric gets its ops-table pointers replaced by pointers to copies
// whose entries are wrappers: fabric (domain, passive_ep, eq_open), domain (endpoint, cq_open,
// av_open, cntr_open, mr reg), endpoint (msg, tagged, rma, atomic, cm), CQ (read/readfrom/readerr/
// sread), AV (insert), EQ (read/sread), passive endpoint (cm).
//
// Provider tables are shared, read-only statics; a copy is made once per distinct table (and CQ
// format) on the control path and never freed. A wrapper finds the real table from the copy it was
// called through (the copy is the first member of a struct holding the real pointer), so the data
// path does no lookup. Objects libfabric opens internally (ofi_rxm's core tcp endpoints) are not
// below a traced object and stay untouched: no double counting.
//
// Data-path wrappers run on application threads: no locks, no system calls, no allocation.
// -kFiEagain (back-pressure, the caller retries) is not recorded; other failures always are.
#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "format/event_types.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/ofi/ofi_abi.h"
#include "profiler/providers/provider.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::ofi {
namespace {

using namespace abi;
using format::AggregateKey;
using format::EventType;
using format::OfiAddressKind;
using format::OfiObject;
using format::OfiOp;

std::atomic<bool> g_active{false};
TraceMode g_mode = TraceMode::simple;

inline bool active() { return g_active.load(std::memory_order_relaxed); }
inline bool control_events() { return g_mode != TraceMode::aggregate; }
inline uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// The length of the addresses an object takes (fi_av_insert, fi_connect): a domain's and an
// endpoint's from the fi_info they were opened with, an address vector's from its domain. One
// process may use several address formats (tcp's sockaddr, shm's names), so the length belongs
// to the object; 0 (unknown) records no bytes rather than read past the caller's buffer, and
// kStringAddresses marks FI_ADDR_STR, whose addresses are NUL-terminated strings of any length.
// Control path: written once per object, read by a scan from the newest (addresses are reused).
class AddressLengths {
 public:
  void set(const void* object, size_t len) {
    if (!object || !len) return;
    uint32_t i = n_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMax) return;  // beyond it, addresses are recorded without their bytes
    len_[i] = len;
    key_[i].store(addr(object), std::memory_order_release);
  }
  size_t get(const void* object) const {
    uint32_t n = n_.load(std::memory_order_relaxed);
    for (uint32_t i = n < kMax ? n : kMax; i-- > 0;)
      if (key_[i].load(std::memory_order_acquire) == addr(object)) return len_[i];
    return 0;
  }

 private:
  static constexpr uint32_t kMax = 4096;
  std::atomic<uintptr_t> key_[kMax] = {};
  size_t len_[kMax] = {};
  std::atomic<uint32_t> n_{0};
};
AddressLengths g_address_lengths;
constexpr size_t kStringAddresses = ~size_t{0};
constexpr size_t kMaxRecordedAddress = 4096;

// The address length an fi_info describes: its format's, else its addresses' own.
size_t address_length(const fi_info* info) {
  if (!info) return 0;
  switch (info->addr_format) {
    case FI_SOCKADDR_IN: return 16;   // struct sockaddr_in
    case FI_SOCKADDR_IN6: return 28;  // struct sockaddr_in6
    case FI_ADDR_STR: return kStringAddresses;
    default: return info->src_addrlen > info->dest_addrlen ? info->src_addrlen : info->dest_addrlen;
  }
}

// The length of the address at a, for an object whose addresses have length `shape`.
size_t address_bytes(const void* a, size_t shape) {
  if (shape != kStringAddresses) return shape;
  return strnlen(static_cast<const char*>(a), kMaxRecordedAddress - 1) + 1;
}

using Reentry = kit::Reentry<struct OfiCalls>;

void call_error(OfiOp call, const void* object, int64_t error) {
  record<EventType::ofi_call_error>(static_cast<uint64_t>(call), addr(object), error);
}

// ---- table copies ------------------------------------------------------------------------------------

template <typename Ops>
struct Wrapped {
  Ops ops;          // first member: the object's table pointer points here
  const Ops* real;  // the provider's table
  int extra;        // CQ format
};

template <typename Ops, uint32_t kMax>
struct TableCopies {
  Wrapped<Ops> entries[kMax];
  uint32_t count = 0;
  std::mutex mu;  // control path only

  bool owns(const void* p) const { return p >= static_cast<const void*>(entries) && p < static_cast<const void*>(entries + kMax); }

  // The copy of `real` with fill()'s wrappers, made once per (real, extra). Null when full.
  Ops* wrap(const Ops* real, int extra, void (*fill)(Ops& copy, const Ops& real)) {
    if (!real || owns(real)) return nullptr;
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t i = 0; i < count; ++i)
      if (entries[i].real == real && entries[i].extra == extra) return &entries[i].ops;
    if (count == kMax) {
      log_line("ofi: more than %u distinct ops tables; further objects are not traced", kMax);
      return nullptr;
    }
    Wrapped<Ops>& w = entries[count];
    std::memset(&w.ops, 0, sizeof w.ops);
    const size_t n = real->size < sizeof(Ops) ? real->size : sizeof(Ops);
    std::memcpy(&w.ops, real, n);
    w.ops.size = n;  // never advertise entries beyond what was copied
    w.real = real;
    w.extra = extra;
    fill(w.ops, *real);
    __atomic_store_n(&count, count + 1, __ATOMIC_RELEASE);
    return &w.ops;
  }
};

template <typename Ops>
[[gnu::always_inline]] inline const Wrapped<Ops>& wrapped(const Ops* table) {
  return *reinterpret_cast<const Wrapped<Ops>*>(table);
}

// An entry present in the provider's table (inside its advertised size and non-null) is replaced.
#define WRAP_ENTRY(copy, real, Ops, entry, wrapper) \
  if (offsetof(Ops, entry) < (copy).size && (real).entry) (copy).entry = &wrapper;

TableCopies<fi_ops_fabric, 32> g_fabric_tables;
TableCopies<fi_ops_domain, 32> g_domain_tables;
TableCopies<fi_ops_mr, 32> g_mr_tables;
TableCopies<fi_ops_msg, 64> g_msg_tables;
TableCopies<fi_ops_tagged, 64> g_tagged_tables;
TableCopies<fi_ops_rma, 64> g_rma_tables;
TableCopies<fi_ops_atomic, 64> g_atomic_tables;
TableCopies<fi_ops_cm, 64> g_cm_tables;
TableCopies<fi_ops_cq, 64> g_cq_tables;
TableCopies<fi_ops_av, 32> g_av_tables;
TableCopies<fi_ops_eq, 32> g_eq_tables;

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

inline uint64_t iov_bytes(const iovec* iov, size_t n) {
  uint64_t b = 0;
  for (size_t i = 0; iov && i < n; ++i) b += iov[i].iov_len;
  return b;
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
void fill_cq(fi_ops_cq& c, const fi_ops_cq& r) {
  WRAP_ENTRY(c, r, fi_ops_cq, read, cq_read)
  WRAP_ENTRY(c, r, fi_ops_cq, readfrom, cq_readfrom)
  WRAP_ENTRY(c, r, fi_ops_cq, readerr, cq_readerr)
  WRAP_ENTRY(c, r, fi_ops_cq, sread, cq_sread)
  WRAP_ENTRY(c, r, fi_ops_cq, sreadfrom, cq_sreadfrom)
}

// ---- control path: addresses, connections, events ------------------------------------------------------

void record_address(const void* object, OfiAddressKind kind, const void* a, size_t len) {
  if (!active() || !control_events() || !a) return;
  const uint64_t words[2] = {addr(object), static_cast<uint64_t>(kind)};
  record_with_bytes<EventType::ofi_ep_address>(words, a, static_cast<uint32_t>(len > kMaxRecordedAddress ? kMaxRecordedAddress : len));
}

int cm_getname(fid* f, void* a, size_t* len) {
  // fid_ep and fid_pep both keep the cm table at offset 32
  static_assert(offsetof(fid_ep, cm) == offsetof(fid_pep, cm));
  const fi_ops_cm* table = reinterpret_cast<fid_ep*>(f)->cm;
  int r = wrapped(table).real->getname(f, a, len);
  if (r == 0 && len) record_address(f, OfiAddressKind::local, a, *len);
  return r;
}
int cm_getpeer(fid_ep* ep, void* a, size_t* len) {
  int r = wrapped(ep->cm).real->getpeer(ep, a, len);
  if (r == 0 && len) record_address(ep, OfiAddressKind::peer, a, *len);
  return r;
}
int cm_connect(fid_ep* ep, const void* a, const void* param, size_t paramlen) {
  int r = wrapped(ep->cm).real->connect(ep, a, param, paramlen);
  if (r == 0 && a) record_address(ep, OfiAddressKind::peer_connect, a, address_bytes(a, g_address_lengths.get(ep)));
  else if (active()) call_error(OfiOp::connect, ep, r);
  return r;
}
int cm_accept(fid_ep* ep, const void* param, size_t paramlen) {
  int r = wrapped(ep->cm).real->accept(ep, param, paramlen);
  if (r != 0 && active()) call_error(OfiOp::accept, ep, r);
  return r;
}
int cm_listen(fid_pep* pep) {
  int r = wrapped(pep->cm).real->listen(pep);
  if (r != 0 && active()) call_error(OfiOp::listen, pep, r);
  return r;
}
void fill_cm(fi_ops_cm& c, const fi_ops_cm& r) {
  WRAP_ENTRY(c, r, fi_ops_cm, getname, cm_getname)
  WRAP_ENTRY(c, r, fi_ops_cm, getpeer, cm_getpeer)
  WRAP_ENTRY(c, r, fi_ops_cm, connect, cm_connect)
  WRAP_ENTRY(c, r, fi_ops_cm, accept, cm_accept)
  WRAP_ENTRY(c, r, fi_ops_cm, listen, cm_listen)
}

int av_insert(fid_av* av, const void* a, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* ctx) {
  int r = wrapped(av->ops).real->insert(av, a, count, fi_addr, flags, ctx);
  if (!active()) return r;
  if (r < 0) {
    call_error(OfiOp::av_insert, av, r);
  } else if (control_events() && a) {
    const size_t shape = g_address_lengths.get(av);
    const auto* p = static_cast<const uint8_t*>(a);
    for (size_t i = 0; i < count && i < 256; ++i) {
      const size_t len = shape ? address_bytes(p, shape) : 0;  // string addresses follow each other
      const uint64_t words[3] = {addr(av), uint64_t{i}, fi_addr ? fi_addr[i] : ~uint64_t{0}};
      record_with_bytes<EventType::ofi_av_insert>(words, len ? p : nullptr,
                        static_cast<uint32_t>(len > kMaxRecordedAddress ? kMaxRecordedAddress : len));
      p += len;
    }
  }
  return r;
}
void fill_av(fi_ops_av& c, const fi_ops_av& r) { WRAP_ENTRY(c, r, fi_ops_av, insert, av_insert) }

void eq_event(const fid_eq* eq, ssize_t r, const uint32_t* event, const void* buf) {
  if (r <= 0 || !event || !active() || !control_events()) return;
  const auto* e = static_cast<const fi_eq_entry*>(buf);
  record<EventType::ofi_eq_event>(addr(eq), uint64_t{*event}, e ? addr(e->fid) : 0);
}
ssize_t eq_read(fid_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  ssize_t r = wrapped(eq->ops).real->read(eq, event, buf, len, flags);
  eq_event(eq, r, event, buf);
  return r;
}
ssize_t eq_sread(fid_eq* eq, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  ssize_t r = wrapped(eq->ops).real->sread(eq, event, buf, len, timeout, flags);
  eq_event(eq, r, event, buf);
  return r;
}
void fill_eq(fi_ops_eq& c, const fi_ops_eq& r) {
  WRAP_ENTRY(c, r, fi_ops_eq, read, eq_read)
  WRAP_ENTRY(c, r, fi_ops_eq, sread, eq_sread)
}

// ---- objects ---------------------------------------------------------------------------------------------

template <typename Ops, uint32_t kMax>
void swap_table(Ops** slot, TableCopies<Ops, kMax>& copies, void (*fill)(Ops&, const Ops&), int extra = 0) {
  if (Ops* w = copies.wrap(*slot, extra, fill)) *slot = w;
}

const char* provider_name(const fi_info* info) {
  return info && info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
}

void endpoint_opened(fid_domain* domain, fi_info* info, fid_ep* ep) {
  swap_table(&ep->msg, g_msg_tables, &fill_msg);
  swap_table(&ep->tagged, g_tagged_tables, &fill_tagged);
  swap_table(&ep->rma, g_rma_tables, &fill_rma);
  swap_table(&ep->atomic, g_atomic_tables, &fill_atomic);
  swap_table(&ep->cm, g_cm_tables, &fill_cm);
  size_t len = address_length(info);
  g_address_lengths.set(ep, len ? len : g_address_lengths.get(domain));
  if (!control_events()) return;
  const char* prov = provider_name(info);
  const uint64_t words[4] = {addr(domain), addr(ep), info && info->ep_attr ? static_cast<uint64_t>(info->ep_attr->type) : 0,
                             info ? info->caps : 0};
  record_with_bytes<EventType::ofi_ep_open>(words, prov, static_cast<uint32_t>(strlen(prov)));
  // An endpoint accepted from a connection request knows its peer from the request's info.
  if (info && info->dest_addr && info->dest_addrlen) record_address(ep, OfiAddressKind::peer, info->dest_addr, info->dest_addrlen);
}

// The one body of a control-path hook: the real call's result, then `opened()` on success or an
// error record on failure (nothing while the provider is off).
template <typename Opened>
inline int control_call(int r, OfiOp op, const void* object, Opened&& opened) {
  if (!active()) return r;
  if (r == 0) opened();
  else call_error(op, object, r);
  return r;
}

void object_opened(OfiObject kind, const void* parent, const void* object, uint64_t attr) {
  if (control_events()) record<EventType::ofi_object_open>(static_cast<uint64_t>(kind), addr(parent), addr(object), attr);
}

int dom_endpoint(fid_domain* d, fi_info* info, fid_ep** ep, void* ctx) {
  return control_call(wrapped(d->ops).real->endpoint(d, info, ep, ctx), OfiOp::endpoint, d,
                      [&] { endpoint_opened(d, info, *ep); });
}
int dom_endpoint2(fid_domain* d, fi_info* info, fid_ep** ep, uint64_t flags, void* ctx) {
  return control_call(wrapped(d->ops).real->endpoint2(d, info, ep, flags, ctx), OfiOp::endpoint, d,
                      [&] { endpoint_opened(d, info, *ep); });
}
int dom_scalable_ep(fid_domain* d, fi_info* info, fid_ep** ep, void* ctx) {
  return control_call(wrapped(d->ops).real->scalable_ep(d, info, ep, ctx), OfiOp::endpoint, d,
                      [&] { object_opened(OfiObject::scalable_ep, d, *ep, 0); });
}
int dom_cq_open(fid_domain* d, void* attr, fid_cq** cq, void* ctx) {
  return control_call(wrapped(d->ops).real->cq_open(d, attr, cq, ctx), OfiOp::cq_open, d, [&] {
    const int format = attr ? static_cast<const fi_cq_attr*>(attr)->format : 0;
    swap_table(&(*cq)->ops, g_cq_tables, &fill_cq, format);
    object_opened(OfiObject::cq, d, *cq, static_cast<uint64_t>(format));
  });
}
int dom_av_open(fid_domain* d, void* attr, fid_av** av, void* ctx) {
  return control_call(wrapped(d->ops).real->av_open(d, attr, av, ctx), OfiOp::av_open, d, [&] {
    swap_table(&(*av)->ops, g_av_tables, &fill_av);
    g_address_lengths.set(*av, g_address_lengths.get(d));
    object_opened(OfiObject::av, d, *av, 0);
  });
}
int dom_cntr_open(fid_domain* d, void* attr, fid_cntr** cntr, void* ctx) {
  return control_call(wrapped(d->ops).real->cntr_open(d, attr, cntr, ctx), OfiOp::cntr_open, d,
                      [&] { object_opened(OfiObject::cntr, d, *cntr, 0); });
}
void fill_domain(fi_ops_domain& c, const fi_ops_domain& r) {
  WRAP_ENTRY(c, r, fi_ops_domain, endpoint, dom_endpoint)
  WRAP_ENTRY(c, r, fi_ops_domain, endpoint2, dom_endpoint2)
  WRAP_ENTRY(c, r, fi_ops_domain, scalable_ep, dom_scalable_ep)
  WRAP_ENTRY(c, r, fi_ops_domain, cq_open, dom_cq_open)
  WRAP_ENTRY(c, r, fi_ops_domain, av_open, dom_av_open)
  WRAP_ENTRY(c, r, fi_ops_domain, cntr_open, dom_cntr_open)
}

void mr_done(fid* domain, int r, fid_mr** mr, const void* buf, uint64_t len, uint64_t access) {
  if (!active()) return;
  if (r != 0) call_error(OfiOp::mr_reg, domain, r);
  else if (control_events() && mr && *mr)
    record<EventType::ofi_mr_reg>(addr(domain), addr(*mr), addr(buf), len, access, (*mr)->key);
}
// The domain's fid is what fi_mr_reg passes; its mr table is found through the fid_domain.
int mr_reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t offset, uint64_t key, uint64_t flags, fid_mr** mr, void* ctx) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->reg(f, buf, len, access, offset, key, flags, mr, ctx);
  mr_done(f, r, mr, buf, len, access);
  return r;
}
int mr_regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key, uint64_t flags, fid_mr** mr,
            void* ctx) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->regv(f, iov, count, access, offset, key, flags, mr, ctx);
  mr_done(f, r, mr, count ? iov[0].iov_base : nullptr, iov_bytes(iov, count), access);
  return r;
}
int mr_regattr(fid* f, const void* attr, uint64_t flags, fid_mr** mr) {
  int r = wrapped(reinterpret_cast<fid_domain*>(f)->mr).real->regattr(f, attr, flags, mr);
  struct MrAttr {
    const iovec* mr_iov;
    size_t iov_count;
    uint64_t access;
  };
  const auto* a = static_cast<const MrAttr*>(attr);
  mr_done(f, r, mr, a && a->iov_count ? a->mr_iov[0].iov_base : nullptr, a ? iov_bytes(a->mr_iov, a->iov_count) : 0, a ? a->access : 0);
  return r;
}
void fill_mr(fi_ops_mr& c, const fi_ops_mr& r) {
  WRAP_ENTRY(c, r, fi_ops_mr, reg, mr_reg)
  WRAP_ENTRY(c, r, fi_ops_mr, regv, mr_regv)
  WRAP_ENTRY(c, r, fi_ops_mr, regattr, mr_regattr)
}

void domain_opened(fid_fabric* fabric, fi_info* info, fid_domain* d) {
  g_address_lengths.set(d, address_length(info));
  swap_table(&d->ops, g_domain_tables, &fill_domain);
  swap_table(&d->mr, g_mr_tables, &fill_mr);
  if (!control_events()) return;
  const char* name = info && info->domain_attr && info->domain_attr->name ? info->domain_attr->name : "";
  const uint64_t words[2] = {addr(fabric), addr(d)};
  record_with_bytes<EventType::ofi_domain_open>(words, name, static_cast<uint32_t>(strlen(name)));
}

int fab_domain(fid_fabric* f, fi_info* info, fid_domain** d, void* ctx) {
  return control_call(wrapped(f->ops).real->domain(f, info, d, ctx), OfiOp::domain, f,
                      [&] { domain_opened(f, info, *d); });
}
int fab_domain2(fid_fabric* f, fi_info* info, fid_domain** d, uint64_t flags, void* ctx) {
  return control_call(wrapped(f->ops).real->domain2(f, info, d, flags, ctx), OfiOp::domain, f,
                      [&] { domain_opened(f, info, *d); });
}
int fab_passive_ep(fid_fabric* f, fi_info* info, fid_pep** pep, void* ctx) {
  return control_call(wrapped(f->ops).real->passive_ep(f, info, pep, ctx), OfiOp::passive_ep, f, [&] {
    swap_table(&(*pep)->cm, g_cm_tables, &fill_cm);
    g_address_lengths.set(*pep, address_length(info));
    object_opened(OfiObject::passive_ep, f, *pep, 0);
  });
}
int fab_eq_open(fid_fabric* f, void* attr, fid_eq** eq, void* ctx) {
  return control_call(wrapped(f->ops).real->eq_open(f, attr, eq, ctx), OfiOp::eq_open, f, [&] {
    swap_table(&(*eq)->ops, g_eq_tables, &fill_eq);
    object_opened(OfiObject::eq, f, *eq, 0);
  });
}
void fill_fabric(fi_ops_fabric& c, const fi_ops_fabric& r) {
  WRAP_ENTRY(c, r, fi_ops_fabric, domain, fab_domain)
  WRAP_ENTRY(c, r, fi_ops_fabric, domain2, fab_domain2)
  WRAP_ENTRY(c, r, fi_ops_fabric, passive_ep, fab_passive_ep)
  WRAP_ENTRY(c, r, fi_ops_fabric, eq_open, fab_eq_open)
}

bool init_ofi(const Config& config, std::string*) {
  g_mode = config.mode;
  return true;
}

RealSymbol g_real_getinfo{"fi_getinfo", "libfabric.so.1", {}, {}};
RealSymbol g_real_fabric{"fi_fabric", "libfabric.so.1", {}, {}};

}  // namespace
}  // namespace sigmatrace::profiler::ofi

namespace sigmatrace::profiler {
extern const InterposedSymbolTable kOfiInterposedSymbols;  // below
extern const InterposedSymbolTable kOfiInterposedSymbols;  // at the end of this file
extern const Provider kOfiProvider = {"ofi", "libfabric: fi_getinfo/fi_fabric and the ops tables of every object below them",
                                      &ofi::init_ofi, &ofi::g_active, &kOfiInterposedSymbols};
}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ofi;
using namespace sigmatrace::profiler::ofi::abi;

// fi_getinfo@@FABRIC_1.3 and fi_fabric@@FABRIC_1.1 (the default versions; plain dlsym finds them).
SIGMATRACE_EXPORT int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
                                 fi_info** info) {
  auto fn = real_function<int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**)>(g_real_getinfo);
  if (!fn) return -38;  // -FI_ENOSYS
  Reentry guard;
  int r = fn(version, node, service, flags, hints, info);
  if (!guard.outer || !active()) return r;
  if (r != 0) {
    call_error(OfiOp::getinfo, nullptr, r);
  } else if (control_events() && info && *info) {
    uint64_t n = 0;
    for (const fi_info* i = *info; i; i = i->next) ++n;
    const char* prov = provider_name(*info);
    const uint64_t words[2] = {static_cast<uint64_t>(int64_t{r}), n};
    record_with_bytes<EventType::ofi_getinfo>(words, prov, static_cast<uint32_t>(strlen(prov)));
  }
  return r;
}

SIGMATRACE_EXPORT int fi_fabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context) {
  auto fn = real_function<int (*)(fi_fabric_attr*, fid_fabric**, void*)>(g_real_fabric);
  if (!fn) return -38;
  Reentry guard;
  int r = fn(attr, fabric, context);
  if (!guard.outer || !active()) return r;
  if (r != 0) {
    call_error(OfiOp::fabric, nullptr, r);
    return r;
  }
  swap_table(&(*fabric)->ops, g_fabric_tables, &fill_fabric);
  if (control_events()) {
    const char* prov = attr && attr->prov_name ? attr->prov_name : "";
    const uint64_t words[2] = {addr(*fabric), 0};
    record_with_bytes<EventType::ofi_fabric_open>(words, prov, static_cast<uint32_t>(strlen(prov)));
  }
  return r;
}

namespace sigmatrace::profiler {
namespace {
// For the dlsym/dlvsym hooks (dl_resolver_hooks.cpp); only the default symbol versions are wrapped.
const InterposedSymbol kOfiSymbols[] = {
    {&ofi::g_real_getinfo, reinterpret_cast<void*>(&::fi_getinfo), &ofi::g_active},
    {&ofi::g_real_fabric, reinterpret_cast<void*>(&::fi_fabric), &ofi::g_active},
};
// Only the default versions are wrapped: fi_getinfo@@FABRIC_1.3, fi_fabric@@FABRIC_1.1.
bool is_ofi_compat(const char* name, const char* version) {
  if (std::strncmp(version, "FABRIC_", 7) != 0) return false;
  return !((std::strcmp(name, "fi_getinfo") == 0 && std::strcmp(version, "FABRIC_1.3") == 0) ||
           (std::strcmp(name, "fi_fabric") == 0 && std::strcmp(version, "FABRIC_1.1") == 0));
}
}  // namespace
extern const InterposedSymbolTable kOfiInterposedSymbols = {kOfiSymbols, sizeof kOfiSymbols / sizeof kOfiSymbols[0], &is_ofi_compat};
}  // namespace sigmatrace::profiler
