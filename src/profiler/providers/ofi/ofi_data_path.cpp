// The ofi provider's data path (see ofi_provider.cpp): the wrappers of the endpoint's message,
// tagged, RMA and atomic operations and of the completion queue's reads, which run on application
// threads: no locks, no system calls, no allocation.
//
// Every operation's wrapper has one body (ep_op): call the real entry of the object's table, then
// record one event (simple/full) or one counter update (aggregate), and an error record on failure.
// What differs between operations is data: which of its arguments hold the length, the peer, the
// tag, the remote address and the context (ArgMap), checked against the entry's types when the
// wrapper is instantiated. (Hand-written bodies once passed a tagged receive's ignore mask in the
// remote-address slot.)
#include <tuple>
#include <type_traits>

#include "profiler/providers/ofi/ofi_internal.h"

namespace sigmatrace::profiler::ofi {

namespace {

// ---- what one operation records ---------------------------------------------------------------------

struct OpArgs {
  uint64_t bytes = 0;
  fi_addr_t peer = 0;
  uint64_t tag = 0;           // tagged: the tag; atomics: op << 8 | datatype
  uint64_t remote_addr = 0;   // RMA and atomics: the target address (the key is not kept)
  const void* context = nullptr;
  uint64_t tag_ignore = 0;    // tagged receives: the bits of the tag that need not match
};

// Positions, among an operation's arguments after the endpoint, of what it records; -1: absent.
struct ArgMap {
  int len = -1;    // a byte count (atomics: an element count, times the datatype's size)
  int iov = -1;    // an iovec array (atomics: fi_ioc), with its entry count at `count`
  int count = -1;
  int msg = -1;    // an fi_msg / fi_msg_tagged / fi_msg_rma / fi_msg_atomic holding all of it
  int peer = -1, tag = -1, ignore = -1, raddr = -1, ctx = -1;
  int dt = -1, op = -1;  // atomics: the datatype and the operation
  bool msg_ignore = false;  // the message's ignore mask is recorded (tagged receives)
};

inline uint64_t ioc_bytes(const fi_ioc* ioc, size_t n, int dt) {
  uint64_t b = 0;
  for (size_t i = 0; ioc && i < n; ++i) b += ioc[i].count;
  return b * datatype_bytes(dt);
}
inline uint64_t atomic_kind(int dt, int op) { return (static_cast<uint64_t>(op) << 8) | static_cast<uint64_t>(dt & 0xff); }
inline uint64_t first_target(const auto* m) { return m->rma_iov_count ? m->rma_iov[0].addr : 0; }

inline OpArgs from_msg(const fi_msg* m) { return {iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, 0, m->context}; }
inline OpArgs from_msg(const fi_msg_tagged* m) {
  return {iov_bytes(m->msg_iov, m->iov_count), m->addr, m->tag, 0, m->context, m->ignore};
}
inline OpArgs from_msg(const fi_msg_rma* m) {
  return {iov_bytes(m->msg_iov, m->iov_count), m->addr, 0, first_target(m), m->context};
}
inline OpArgs from_msg(const fi_msg_atomic* m) {
  return {ioc_bytes(m->msg_iov, m->iov_count, m->datatype), m->addr, atomic_kind(m->datatype, m->op), first_target(m), m->context};
}

template <typename T, typename... Expected>
inline constexpr bool one_of = (std::is_same_v<T, Expected> || ...);

template <ArgMap M, typename... A>
[[gnu::always_inline]] inline OpArgs describe(const A&... a) {
  using Args = std::tuple<A...>;
  const auto args = std::forward_as_tuple(a...);
  OpArgs d;
  if constexpr (M.msg >= 0) {
    d = from_msg(std::get<M.msg>(args));
    if constexpr (!M.msg_ignore) d.tag_ignore = 0;
  } else {
    if constexpr (M.len >= 0) {
      static_assert(std::is_same_v<std::tuple_element_t<M.len, Args>, size_t>, "len: not a size_t argument");
      d.bytes = std::get<M.len>(args);
    }
    if constexpr (M.iov >= 0) {
      static_assert(one_of<std::tuple_element_t<M.iov, Args>, const iovec*, const fi_ioc*>, "iov: not an I/O vector");
      static_assert(std::is_same_v<std::tuple_element_t<M.count, Args>, size_t>, "count: not a size_t argument");
      if constexpr (M.dt >= 0) d.bytes = ioc_bytes(std::get<M.iov>(args), std::get<M.count>(args), std::get<M.dt>(args));
      else d.bytes = iov_bytes(std::get<M.iov>(args), std::get<M.count>(args));
    }
    if constexpr (M.dt >= 0) {
      static_assert(std::is_same_v<std::tuple_element_t<M.dt, Args>, int> && std::is_same_v<std::tuple_element_t<M.op, Args>, int>,
                    "dt/op: not the datatype and op arguments");
      if constexpr (M.len >= 0) d.bytes *= datatype_bytes(std::get<M.dt>(args));
      d.tag = atomic_kind(std::get<M.dt>(args), std::get<M.op>(args));
    }
    if constexpr (M.peer >= 0) d.peer = std::get<M.peer>(args);
    if constexpr (M.tag >= 0) d.tag = std::get<M.tag>(args);
    if constexpr (M.ignore >= 0) d.tag_ignore = std::get<M.ignore>(args);
    if constexpr (M.raddr >= 0) d.remote_addr = std::get<M.raddr>(args);
    if constexpr (M.ctx >= 0) {
      static_assert(std::is_same_v<std::tuple_element_t<M.ctx, Args>, void*>, "ctx: not the context argument");
      d.context = std::get<M.ctx>(args);
    }
  }
  return d;
}

// The one body of every endpoint operation's wrapper: Table is the endpoint's ops table
// (&fid_ep::msg, ...), Entry the operation in it.
template <auto Table, auto Entry, OfiOp Op, ArgMap M, typename... A>
ssize_t ep_op(fid_ep* ep, A... a) {
  const ssize_t r = (wrapped(ep->*Table).real->*Entry)(ep, a...);
  if (r == -kFiEagain || !active()) return r;
  if (g_mode == TraceMode::aggregate) {
    if (r == 0) aggregate_add(AggregateKey::ofi_ep_op, addr(ep), static_cast<uint64_t>(Op), describe<M>(a...).bytes);
  } else {
    const OpArgs d = describe<M>(a...);
    record<EventType::ofi_op>(static_cast<uint64_t>(Op), addr(ep), d.bytes, d.peer, d.tag, d.remote_addr, addr(d.context), int64_t{r},
                              d.tag_ignore);
  }
  if (__builtin_expect(r < 0, 0)) call_error(Op, ep, r);
  return r;
}

}  // namespace

// An operation present in the provider's table (inside its advertised size and non-null) gets its
// wrapper: WRAP_OP(endpoint table, ops type, entry, OfiOp, ArgMap fields...).
#define WRAP_OP(table, Ops, entry, op, ...)                   \
  if (offsetof(Ops, entry) < c.size && r.entry) c.entry = &ep_op<&fid_ep::table, &Ops::entry, op, ArgMap{__VA_ARGS__}>;

// Arguments after the endpoint, by entry: (buf, len, desc, addr, ctx), (iov, desc, count, addr,
// ctx), (msg, flags), (buf, len, addr), (buf, len, desc, data, addr, ctx), (buf, len, data, addr).
void fill_msg(fi_ops_msg& c, const fi_ops_msg& r) {
  WRAP_OP(msg, fi_ops_msg, recv, OfiOp::recv, .len = 1, .peer = 3, .ctx = 4)
  WRAP_OP(msg, fi_ops_msg, recvv, OfiOp::recvv, .iov = 0, .count = 2, .peer = 3, .ctx = 4)
  WRAP_OP(msg, fi_ops_msg, recvmsg, OfiOp::recvmsg, .msg = 0)
  WRAP_OP(msg, fi_ops_msg, send, OfiOp::send, .len = 1, .peer = 3, .ctx = 4)
  WRAP_OP(msg, fi_ops_msg, sendv, OfiOp::sendv, .iov = 0, .count = 2, .peer = 3, .ctx = 4)
  WRAP_OP(msg, fi_ops_msg, sendmsg, OfiOp::sendmsg, .msg = 0)
  WRAP_OP(msg, fi_ops_msg, inject, OfiOp::inject, .len = 1, .peer = 2)
  WRAP_OP(msg, fi_ops_msg, senddata, OfiOp::senddata, .len = 1, .peer = 4, .ctx = 5)
  WRAP_OP(msg, fi_ops_msg, injectdata, OfiOp::injectdata, .len = 1, .peer = 3)
}

// As fill_msg's, with the tag after the address (receives: then the ignore mask).
void fill_tagged(fi_ops_tagged& c, const fi_ops_tagged& r) {
  WRAP_OP(tagged, fi_ops_tagged, recv, OfiOp::trecv, .len = 1, .peer = 3, .tag = 4, .ignore = 5, .ctx = 6)
  WRAP_OP(tagged, fi_ops_tagged, recvv, OfiOp::trecvv, .iov = 0, .count = 2, .peer = 3, .tag = 4, .ignore = 5, .ctx = 6)
  WRAP_OP(tagged, fi_ops_tagged, recvmsg, OfiOp::trecvmsg, .msg = 0, .msg_ignore = true)
  WRAP_OP(tagged, fi_ops_tagged, send, OfiOp::tsend, .len = 1, .peer = 3, .tag = 4, .ctx = 5)
  WRAP_OP(tagged, fi_ops_tagged, sendv, OfiOp::tsendv, .iov = 0, .count = 2, .peer = 3, .tag = 4, .ctx = 5)
  WRAP_OP(tagged, fi_ops_tagged, sendmsg, OfiOp::tsendmsg, .msg = 0)
  WRAP_OP(tagged, fi_ops_tagged, inject, OfiOp::tinject, .len = 1, .peer = 2, .tag = 3)
  WRAP_OP(tagged, fi_ops_tagged, senddata, OfiOp::tsenddata, .len = 1, .peer = 4, .tag = 5, .ctx = 6)
  WRAP_OP(tagged, fi_ops_tagged, injectdata, OfiOp::tinjectdata, .len = 1, .peer = 3, .tag = 4)
}

// As fill_msg's, with the target address and key after the address.
void fill_rma(fi_ops_rma& c, const fi_ops_rma& r) {
  WRAP_OP(rma, fi_ops_rma, read, OfiOp::read, .len = 1, .peer = 3, .raddr = 4, .ctx = 6)
  WRAP_OP(rma, fi_ops_rma, readv, OfiOp::readv, .iov = 0, .count = 2, .peer = 3, .raddr = 4, .ctx = 6)
  WRAP_OP(rma, fi_ops_rma, readmsg, OfiOp::readmsg, .msg = 0)
  WRAP_OP(rma, fi_ops_rma, write, OfiOp::write, .len = 1, .peer = 3, .raddr = 4, .ctx = 6)
  WRAP_OP(rma, fi_ops_rma, writev, OfiOp::writev, .iov = 0, .count = 2, .peer = 3, .raddr = 4, .ctx = 6)
  WRAP_OP(rma, fi_ops_rma, writemsg, OfiOp::writemsg, .msg = 0)
  WRAP_OP(rma, fi_ops_rma, inject, OfiOp::inject_write, .len = 1, .peer = 2, .raddr = 3)
  WRAP_OP(rma, fi_ops_rma, writedata, OfiOp::writedata, .len = 1, .peer = 4, .raddr = 5, .ctx = 7)
  WRAP_OP(rma, fi_ops_rma, injectdata, OfiOp::inject_writedata, .len = 1, .peer = 3, .raddr = 4)
}

// Atomics: (buf, count, desc, addr, target, key, datatype, op, ctx) and their vector, message,
// inject, fetching (result buffers after the operands) and compare (compare operands, then results)
// forms.
void fill_atomic(fi_ops_atomic& c, const fi_ops_atomic& r) {
  WRAP_OP(atomic, fi_ops_atomic, write, OfiOp::atomic, .len = 1, .peer = 3, .raddr = 4, .ctx = 8, .dt = 6, .op = 7)
  WRAP_OP(atomic, fi_ops_atomic, writev, OfiOp::atomicv, .iov = 0, .count = 2, .peer = 3, .raddr = 4, .ctx = 8, .dt = 6, .op = 7)
  WRAP_OP(atomic, fi_ops_atomic, writemsg, OfiOp::atomicmsg, .msg = 0)
  WRAP_OP(atomic, fi_ops_atomic, inject, OfiOp::inject_atomic, .len = 1, .peer = 2, .raddr = 3, .dt = 5, .op = 6)
  WRAP_OP(atomic, fi_ops_atomic, readwrite, OfiOp::fetch_atomic, .len = 1, .peer = 5, .raddr = 6, .ctx = 10, .dt = 8, .op = 9)
  WRAP_OP(atomic, fi_ops_atomic, readwritev, OfiOp::fetch_atomicv, .iov = 0, .count = 2, .peer = 6, .raddr = 7, .ctx = 11, .dt = 9,
          .op = 10)
  WRAP_OP(atomic, fi_ops_atomic, readwritemsg, OfiOp::fetch_atomicmsg, .msg = 0)
  WRAP_OP(atomic, fi_ops_atomic, compwrite, OfiOp::compare_atomic, .len = 1, .peer = 7, .raddr = 8, .ctx = 12, .dt = 10, .op = 11)
  WRAP_OP(atomic, fi_ops_atomic, compwritev, OfiOp::compare_atomicv, .iov = 0, .count = 2, .peer = 9, .raddr = 10, .ctx = 14,
          .dt = 12, .op = 13)
  WRAP_OP(atomic, fi_ops_atomic, compwritemsg, OfiOp::compare_atomicmsg, .msg = 0)
}

#undef WRAP_OP

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

// The one body of the CQ reads (read, readfrom, sread, sreadfrom: the buffer first, then the count,
// and for the *from forms the source addresses at kSrc).
template <auto Entry, int kSrc, typename... A>
ssize_t cq_read(fid_cq* cq, void* buf, A... a) {
  const ssize_t n = (wrapped(cq->ops).real->*Entry)(cq, buf, a...);
  if constexpr (kSrc >= 0) completions(cq, buf, n, std::get<kSrc>(std::forward_as_tuple(a...)));
  else completions(cq, buf, n, nullptr);
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
  // Positions after the buffer: (count), (count, src), (count, cond, timeout), (count, src, cond, timeout).
  WRAP_ENTRY(c, r, fi_ops_cq, read, (cq_read<&fi_ops_cq::read, -1>))
  WRAP_ENTRY(c, r, fi_ops_cq, readfrom, (cq_read<&fi_ops_cq::readfrom, 1>))
  WRAP_ENTRY(c, r, fi_ops_cq, readerr, cq_readerr)
  WRAP_ENTRY(c, r, fi_ops_cq, sread, (cq_read<&fi_ops_cq::sread, -1>))
  WRAP_ENTRY(c, r, fi_ops_cq, sreadfrom, (cq_read<&fi_ops_cq::sreadfrom, 1>))
}

}  // namespace sigmatrace::profiler::ofi
