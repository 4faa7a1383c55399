// Exported UCP functions (libucp exports them unversioned, and an application reaches them through
// its PLT): workers, endpoints (with the peer's worker address or socket address), memory mapping
// and rkeys, put/get/atomic, tag/stream/active-message send and receive in the nbx, nb, nbr and
// nbi families, flush, request completion, and ucp_worker_progress. Each shim calls the real
// function, then records one event (simple/full) or one counter update (aggregate); errors are
// recorded in every mode. Return values and errno are the real function's.
//
// Data-path shims run on application threads: no locks, no system calls, no allocation.
// ucp_worker_progress is called millions of times per run: it costs one indirect call and one
// test unless it made progress in full mode.
#include <dlfcn.h>

#include <cstring>

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider.h"
#include "profiler/providers/ucx/ucx_state.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler {
namespace ucx {

std::atomic<bool> g_active{false};
TraceMode g_mode = TraceMode::simple;
bool g_record_progress = false;  // full mode
thread_local UctLane t_uct_lane __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr};
// When the traced operation was called: an operation is stamped at its call, not at its return
// (a blocking eager send can be received before it returns; its arrow must not run backwards).
static thread_local uint64_t t_op_tsc __attribute__((tls_model("initial-exec"))) = 0;

#define SIGMATRACE_UCP_SYMBOLS(X)                                                                                  \
  X(ucp_worker_create) X(ucp_worker_destroy) X(ucp_ep_create) X(ucp_ep_close_nbx) X(ucp_ep_close_nb) X(ucp_ep_destroy) \
  X(ucp_mem_map) X(ucp_mem_unmap) X(ucp_rkey_pack) X(ucp_ep_rkey_unpack) X(ucp_put_nbx) X(ucp_get_nbx) X(ucp_put_nbi)  \
  X(ucp_get_nbi) X(ucp_put_nb) X(ucp_get_nb) X(ucp_atomic_op_nbx) X(ucp_atomic_post) X(ucp_atomic_fetch_nb)            \
  X(ucp_tag_send_nbx) X(ucp_tag_send_sync_nbx) X(ucp_tag_recv_nbx) X(ucp_tag_msg_recv_nbx) X(ucp_tag_send_nb)           \
  X(ucp_tag_send_nbr) X(ucp_tag_send_sync_nb) X(ucp_tag_recv_nb) X(ucp_tag_recv_nbr) X(ucp_tag_msg_recv_nb)            \
  X(ucp_tag_probe_nb) X(ucp_stream_send_nbx) X(ucp_stream_recv_nbx) X(ucp_stream_send_nb) X(ucp_stream_recv_nb)        \
  X(ucp_am_send_nbx) X(ucp_am_send_nb) X(ucp_am_recv_data_nbx) X(ucp_worker_set_am_recv_handler)                       \
  X(ucp_worker_set_am_handler) X(ucp_worker_flush_nbx) X(ucp_ep_flush_nbx) X(ucp_worker_flush_nb) X(ucp_ep_flush_nb)   \
  X(ucp_worker_flush) X(ucp_ep_flush) X(ucp_worker_fence) X(ucp_request_check_status) X(ucp_request_test)              \
  X(ucp_tag_recv_request_test) X(ucp_stream_recv_request_test) X(ucp_worker_progress) X(ucp_request_free)          \
  X(ucp_request_release)

namespace real {
#define SIGMATRACE_REAL_SYMBOL(name) RealSymbol name{#name, "libucp.so.0", {}, {}};
SIGMATRACE_UCP_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace real

namespace {

using namespace abi;
using format::AggregateKey;
using format::UcxPeerKind;

inline uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

inline uint64_t dt_bytes(const void* buffer, size_t count, ucp_datatype_t dt) {
  switch (dt & UCP_DATATYPE_CLASS_MASK) {
    case UCP_DATATYPE_CONTIG: return uint64_t{count} * (dt >> UCP_DATATYPE_SHIFT);
    case UCP_DATATYPE_IOV: {
      uint64_t b = 0;
      const auto* iov = static_cast<const ucp_dt_iov*>(buffer);
      for (size_t i = 0; iov && i < count; ++i) b += iov[i].length;
      return b;
    }
    default: return count;  // strided/generic: the element count
  }
}
inline uint64_t nbx_bytes(const void* buffer, size_t count, const void* param) {
  auto* p = static_cast<const ucp_request_param*>(param);
  if (p && (p->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) return dt_bytes(buffer, count, p->datatype);
  return count;
}

// One UCP data operation has returned: `ret` is its status pointer (or a status as a pointer).
[[gnu::always_inline]] inline void op_done(UcxOp op, const void* object, uint64_t bytes, uint64_t tag, uint64_t tag_mask,
                                           uint64_t remote_addr, const void* ret) {
  const ucs_status_t st = ptr_status(ret);
  if (g_mode == TraceMode::aggregate) {
    if (st >= 0) aggregate_add(AggregateKey::ucx_ep_op, addr(object), static_cast<uint64_t>(op), bytes);
  } else {
    const UctLane lane = t_uct_lane;
    record_at<EventType::ucx_op>(t_op_tsc, static_cast<uint64_t>(op), addr(object), bytes, tag, tag_mask, remote_addr,
           ptr_is_ptr(ret) ? addr(ret) : uint64_t{0}, int64_t{st}, addr(lane.iface), addr(lane.ep));
  }
  if (__builtin_expect(st < 0, 0)) record_error(op, object, st);
}

inline void* status_as_ptr(ucs_status_t s) { return reinterpret_cast<void*>(static_cast<intptr_t>(s)); }

inline bool tracing(const Reentry& g) { return g.outer && active(); }

// Before the real call: forget the previous lane, so that the one seen after is this call's, and
// take the call's timestamp (aggregate mode records none).
inline void begin_op() {
  t_uct_lane = {nullptr, nullptr};
  if (g_mode != TraceMode::aggregate) t_op_tsc = read_tsc();
}

// The one body of every traced UCP operation: untraced (nested, or the provider off), the call is
// forwarded; traced, the previous lane is forgotten, the real function runs and `describe` records
// the call with its result. (Hand-written bodies once forgot begin_op() in ucp_worker_fence, which
// then reported the previous call's lane.)
template <typename Fn, typename Describe, typename... Args>
[[gnu::always_inline]] inline auto traced_op(Fn fn, const Reentry& guard, Describe&& describe, Args... args) {
  if (!tracing(guard)) return fn(args...);
  begin_op();
  auto result = fn(args...);
  describe(result);
  return result;
}

void request_done(const void* request, ucs_status_t status, uint64_t tag, uint64_t length) {
  if (g_mode != TraceMode::aggregate) record<EventType::ucx_request_done>(addr(request), int64_t{status}, tag, length);
  if (status < 0) record_error(UcxOp::request, request, status);
}

// ---- active-message handlers: the application's callback is called through a trampoline -------
constexpr uint32_t kMaxAmHandlers = 1024;
struct AmHandler {
  std::atomic<void*> worker;
  unsigned id;
  ucp_am_recv_callback_t cb;
  ucp_am_callback_t old_cb;
  void* arg;
};
AmHandler g_am_handlers[kMaxAmHandlers];
std::atomic<uint32_t> g_am_handler_count{0};

AmHandler* am_handler_slot(void* worker, unsigned id) {
  uint32_t n = g_am_handler_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && i < kMaxAmHandlers; ++i)
    if (g_am_handlers[i].worker.load(std::memory_order_acquire) == worker && g_am_handlers[i].id == id) return &g_am_handlers[i];
  uint32_t i = g_am_handler_count.fetch_add(1);
  if (i >= kMaxAmHandlers) return nullptr;
  g_am_handlers[i].id = id;
  g_am_handlers[i].worker.store(worker, std::memory_order_release);
  return &g_am_handlers[i];
}

void record_am_recv(const AmHandler* h, size_t header_length, size_t length, void* reply_ep, uint64_t attr) {
  if (!active()) return;
  if (g_mode == TraceMode::aggregate)
    aggregate_add(AggregateKey::ucx_ep_op, addr(h->worker.load(std::memory_order_relaxed)), 0x100 + uint64_t{h->id}, length);
  else
    record<EventType::ucx_am_recv>(addr(h->worker.load(std::memory_order_relaxed)), uint64_t{h->id}, uint64_t{header_length},
           uint64_t{length}, addr(reply_ep), attr);
}

ucs_status_t am_recv_trampoline(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                const ucp_am_recv_param* param) {
  auto* h = static_cast<AmHandler*>(arg);
  record_am_recv(h, header_length, length, param ? param->reply_ep : nullptr, param ? param->recv_attr : 0);
  return h->cb(h->arg, header, header_length, data, length, param);
}

ucs_status_t am_old_trampoline(void* arg, void* data, size_t length, ucp_ep_h reply_ep, unsigned flags) {
  auto* h = static_cast<AmHandler*>(arg);
  record_am_recv(h, 0, length, reply_ep, flags);
  return h->old_cb(h->arg, data, length, reply_ep, flags);
}

bool init_ucx(const Config& config, std::string*) {
  g_mode = config.mode;
  g_record_progress = config.mode == TraceMode::full;
  return true;
}

}  // namespace
}  // namespace ucx

extern const InterposedSymbolTable kUcpInterposedSymbols;  // below
namespace {
// uct_iface_open, _close and uct_ep_create: libucp calls them through its PLT (ucx_uct_patch.cpp).
const char* const kUctExports[] = {"uct_iface_open", "uct_iface_close", "uct_ep_create"};
}  // namespace
extern const Provider kUcxProvider = {"ucx", "UCX: UCP calls (exported) and UCT interface ops tables", &ucx::init_ucx,
                                      &ucx::g_active, &kUcpInterposedSymbols, kUctExports};

}  // namespace sigmatrace::profiler

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ucx;
using namespace sigmatrace::profiler::ucx::abi;
using sigmatrace::format::UcxPeerKind;

#define UCP_REAL(name, type, fail)                  \
  auto fn = real_function<type>(ucx::real::name);   \
  if (__builtin_expect(fn == nullptr, 0)) return fail; \
  Reentry guard

// ---- workers and endpoints ------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_t ucp_worker_create(ucp_context_h context, const void* params, ucp_worker_h* worker_p) {
  UCP_REAL(ucp_worker_create, ucs_status_t (*)(ucp_context_h, const void*, ucp_worker_h*), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, params, worker_p);
  if (!tracing(guard)) return st;
  ErrnoKeeper keep;
  if (st != UCS_OK) {
    record_error(UcxOp::worker_create, context, st);
    return st;
  }
  if (!control_events()) return st;
  // The worker's address is what peers pass to ucp_ep_create: the analysis joins the two ends with it.
  ucp_worker_attr attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  using QueryFn = ucs_status_t (*)(ucp_worker_h, ucp_worker_attr*);
  using ReleaseFn = void (*)(ucp_worker_h, void*);
  DlsymFn ds = real_dlsym();
  auto query = ds ? reinterpret_cast<QueryFn>(ds(RTLD_DEFAULT, "ucp_worker_query")) : nullptr;
  auto release = ds ? reinterpret_cast<ReleaseFn>(ds(RTLD_DEFAULT, "ucp_worker_release_address")) : nullptr;
  const uint64_t words[2] = {addr(context), addr(*worker_p)};
  if (query && release && query(*worker_p, &attr) == UCS_OK && attr.address) {
    record_with_bytes<EventType::ucx_worker_create>(words, attr.address, static_cast<uint32_t>(attr.address_length));
    release(*worker_p, attr.address);
  } else {
    record_with_bytes<EventType::ucx_worker_create>(words, nullptr, 0);
  }
  return st;
}

SIGMATRACE_EXPORT void ucp_worker_destroy(ucp_worker_h worker) {
  auto fn = real_function<void (*)(ucp_worker_h)>(ucx::real::ucp_worker_destroy);
  if (!fn) return;
  Reentry guard;
  fn(worker);
  if (tracing(guard) && control_events()) record<EventType::ucx_worker_destroy>(addr(worker));
}

// The prefix of a packed worker address recorded at ucp_ep_create (the address carries no length;
// every packed address is longer than this: a header byte and the 64-bit worker UUID come first).
constexpr uint32_t kPeerAddressPrefixBytes = 16;

SIGMATRACE_EXPORT ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params* params, ucp_ep_h* ep_p) {
  UCP_REAL(ucp_ep_create, ucs_status_t (*)(ucp_worker_h, const ucp_ep_params*, ucp_ep_h*), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(worker, params, ep_p);
  if (!tracing(guard)) return st;
  ErrnoKeeper keep;
  if (st != UCS_OK) record_error(UcxOp::ep_create, worker, st);
  if (!control_events()) return st;
  UcxPeerKind kind = UcxPeerKind::unknown;
  const void* peer = nullptr;
  uint32_t len = 0;
  if (params && (params->field_mask & UCP_EP_PARAM_FIELD_REMOTE_ADDRESS) && params->address) {
    kind = UcxPeerKind::worker_address, peer = params->address, len = kPeerAddressPrefixBytes;
  } else if (params && (params->field_mask & UCP_EP_PARAM_FIELD_SOCK_ADDR) && params->sockaddr.addr) {
    kind = UcxPeerKind::sockaddr, peer = params->sockaddr.addr, len = params->sockaddr.addrlen;
  } else if (params && (params->field_mask & UCP_EP_PARAM_FIELD_CONN_REQUEST)) {
    kind = UcxPeerKind::conn_request;
  }
  const uint64_t words[4] = {addr(worker), st == UCS_OK ? addr(*ep_p) : 0, static_cast<uint64_t>(kind),
                             static_cast<uint64_t>(static_cast<int64_t>(st))};
  record_with_bytes<EventType::ucx_ep_create>(words, peer, len);
  return st;
}

namespace {
void ep_closed(const Reentry& guard, ucp_ep_h ep, const void* ret) {
  if (!tracing(guard)) return;
  if (control_events()) record<EventType::ucx_ep_close>(addr(ep));
  if (ptr_status(ret) < 0) record_error(UcxOp::ep_close, ep, ptr_status(ret));
}
}  // namespace

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const void* param) {
  UCP_REAL(ucp_ep_close_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  ucs_status_ptr_t r = fn(ep, param);
  ep_closed(guard, ep, r);
  return r;
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode) {
  UCP_REAL(ucp_ep_close_nb, ucs_status_ptr_t (*)(ucp_ep_h, unsigned), status_as_ptr(UCS_ERR_NO_MEMORY));
  ucs_status_ptr_t r = fn(ep, mode);
  ep_closed(guard, ep, r);
  return r;
}

SIGMATRACE_EXPORT void ucp_ep_destroy(ucp_ep_h ep) {
  auto fn = real_function<void (*)(ucp_ep_h)>(ucx::real::ucp_ep_destroy);
  if (!fn) return;
  Reentry guard;
  fn(ep);
  ep_closed(guard, ep, nullptr);
}

// ---- memory and rkeys ----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_t ucp_mem_map(ucp_context_h context, const void* params, ucp_mem_h* memh_p) {
  UCP_REAL(ucp_mem_map, ucs_status_t (*)(ucp_context_h, const void*, ucp_mem_h*), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, params, memh_p);
  if (!tracing(guard)) return st;
  ErrnoKeeper keep;
  if (st != UCS_OK) {
    record_error(UcxOp::mem_map, context, st);
    return st;
  }
  if (!control_events()) return st;
  // The mapped range (UCP may have allocated it): asked from UCP rather than read from params.
  using QueryFn = ucs_status_t (*)(const ucp_mem_h, ucp_mem_attr*);
  static std::atomic<QueryFn> query{nullptr};
  QueryFn q = query.load(std::memory_order_acquire);
  if (!q) {
    if (DlsymFn ds = real_dlsym()) q = reinterpret_cast<QueryFn>(ds(RTLD_DEFAULT, "ucp_mem_query"));
    query.store(q, std::memory_order_release);
  }
  ucp_mem_attr attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH | UCP_MEM_ATTR_FIELD_MEM_TYPE;
  if (!q || q(*memh_p, &attr) != UCS_OK) attr = {};
  record<EventType::ucx_mem_map>(addr(*memh_p), addr(attr.address), uint64_t{attr.length}, static_cast<uint64_t>(attr.mem_type));
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh) {
  UCP_REAL(ucp_mem_unmap, ucs_status_t (*)(ucp_context_h, ucp_mem_h), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, memh);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::mem_unmap, memh, st);
  else if (control_events()) record<EventType::ucx_mem_unmap>(addr(memh));
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void** buffer, size_t* size) {
  UCP_REAL(ucp_rkey_pack, ucs_status_t (*)(ucp_context_h, ucp_mem_h, void**, size_t*), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, memh, buffer, size);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::rkey_pack, memh, st);
  else if (control_events()) record<EventType::ucx_rkey_pack>(addr(memh), uint64_t{*size});
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void* buffer, ucp_rkey_h* rkey_p) {
  UCP_REAL(ucp_ep_rkey_unpack, ucs_status_t (*)(ucp_ep_h, const void*, ucp_rkey_h*), UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(ep, buffer, rkey_p);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::rkey_unpack, ep, st);
  else if (control_events()) record<EventType::ucx_rkey_unpack>(addr(ep), addr(*rkey_p));
  return st;
}

// ---- RMA and atomics -----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr,
                                               ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_put_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, uint64_t, ucp_rkey_h, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::put, ep, nbx_bytes(buffer, count, param), 0, 0, remote_addr, r);
  }, ep, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr,
                                               ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_get_nbx, ucs_status_ptr_t (*)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::get, ep, nbx_bytes(buffer, count, param), 0, 0, remote_addr, r);
  }, ep, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey) {
  UCP_REAL(ucp_put_nbi, ucs_status_t (*)(ucp_ep_h, const void*, size_t, uint64_t, ucp_rkey_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::put, ep, length, 0, 0, remote_addr, status_as_ptr(st));
  }, ep, buffer, length, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_t ucp_get_nbi(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey) {
  UCP_REAL(ucp_get_nbi, ucs_status_t (*)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::get, ep, length, 0, 0, remote_addr, status_as_ptr(st));
  }, ep, buffer, length, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr,
                                              ucp_rkey_h rkey, void* cb) {
  UCP_REAL(ucp_put_nb, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, uint64_t, ucp_rkey_h, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::put, ep, length, 0, 0, remote_addr, r);
  }, ep, buffer, length, remote_addr, rkey, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey,
                                              void* cb) {
  UCP_REAL(ucp_get_nb, ucs_status_ptr_t (*)(ucp_ep_h, void*, size_t, uint64_t, ucp_rkey_h, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::get, ep, length, 0, 0, remote_addr, r);
  }, ep, buffer, length, remote_addr, rkey, cb);
}

// Atomics: tag holds the UCP atomic opcode.
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, int opcode, const void* buffer, size_t count,
                                                     uint64_t remote_addr, ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_atomic_op_nbx, ucs_status_ptr_t (*)(ucp_ep_h, int, const void*, size_t, uint64_t, ucp_rkey_h, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    auto* p = static_cast<const ucp_request_param*>(param);
    const bool fetch = p && (p->op_attr_mask & (1u << 5)) && p->reply_buffer;  // UCP_OP_ATTR_FIELD_REPLY_BUFFER
    op_done(fetch ? UcxOp::atomic_fetch : UcxOp::atomic_post, ep, nbx_bytes(buffer, count, param), static_cast<uint64_t>(opcode), 0,
            remote_addr, r);
  }, ep, opcode, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_t ucp_atomic_post(ucp_ep_h ep, int opcode, uint64_t value, size_t op_size, uint64_t remote_addr,
                                               ucp_rkey_h rkey) {
  UCP_REAL(ucp_atomic_post, ucs_status_t (*)(ucp_ep_h, int, uint64_t, size_t, uint64_t, ucp_rkey_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::atomic_post, ep, op_size, static_cast<uint64_t>(opcode), 0, remote_addr, status_as_ptr(st));
  }, ep, opcode, value, op_size, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, int opcode, uint64_t value, void* result, size_t op_size,
                                                       uint64_t remote_addr, ucp_rkey_h rkey, void* cb) {
  UCP_REAL(ucp_atomic_fetch_nb,
           ucs_status_ptr_t (*)(ucp_ep_h, int, uint64_t, void*, size_t, uint64_t, ucp_rkey_h, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::atomic_fetch, ep, op_size, static_cast<uint64_t>(opcode), 0, remote_addr, r);
  }, ep, opcode, value, result, op_size, remote_addr, rkey, cb);
}

// ---- tag matching --------------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                                    const void* param) {
  UCP_REAL(ucp_tag_send_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, ucp_tag_t, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send, ep, nbx_bytes(buffer, count, param), tag, 0, 0, r);
  }, ep, buffer, count, tag, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                                         const void* param) {
  UCP_REAL(ucp_tag_send_sync_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, ucp_tag_t, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send_sync, ep, nbx_bytes(buffer, count, param), tag, 0, 0, r);
  }, ep, buffer, count, tag, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, ucp_tag_t tag,
                                                    ucp_tag_t tag_mask, const void* param) {
  UCP_REAL(ucp_tag_recv_nbx, ucs_status_ptr_t (*)(ucp_worker_h, void*, size_t, ucp_tag_t, ucp_tag_t, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_recv, worker, nbx_bytes(buffer, count, param), tag, tag_mask, 0, r);
  }, worker, buffer, count, tag, tag_mask, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, void* message,
                                                        const void* param) {
  UCP_REAL(ucp_tag_msg_recv_nbx, ucs_status_ptr_t (*)(ucp_worker_h, void*, size_t, void*, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_msg_recv, worker, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, worker, buffer, count, message, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt,
                                                   ucp_tag_t tag, void* cb) {
  UCP_REAL(ucp_tag_send_nb, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, ucp_datatype_t, ucp_tag_t, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send, ep, dt_bytes(buffer, count, dt), tag, 0, 0, r);
  }, ep, buffer, count, dt, tag, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag,
                                                void* req) {
  UCP_REAL(ucp_tag_send_nbr, ucs_status_t (*)(ucp_ep_h, const void*, size_t, ucp_datatype_t, ucp_tag_t, void*),
           UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::tag_send, ep, dt_bytes(buffer, count, dt), tag, 0, 0, st == UCS_INPROGRESS ? req : status_as_ptr(st));
  }, ep, buffer, count, dt, tag, req);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt,
                                                        ucp_tag_t tag, void* cb) {
  UCP_REAL(ucp_tag_send_sync_nb, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, ucp_datatype_t, ucp_tag_t, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send_sync, ep, dt_bytes(buffer, count, dt), tag, 0, 0, r);
  }, ep, buffer, count, dt, tag, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt,
                                                   ucp_tag_t tag, ucp_tag_t tag_mask, void* cb) {
  UCP_REAL(ucp_tag_recv_nb,
           ucs_status_ptr_t (*)(ucp_worker_h, void*, size_t, ucp_datatype_t, ucp_tag_t, ucp_tag_t, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_recv, worker, dt_bytes(buffer, count, dt), tag, tag_mask, 0, r);
  }, worker, buffer, count, dt, tag, tag_mask, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag,
                                                ucp_tag_t tag_mask, void* req) {
  UCP_REAL(ucp_tag_recv_nbr, ucs_status_t (*)(ucp_worker_h, void*, size_t, ucp_datatype_t, ucp_tag_t, ucp_tag_t, void*),
           UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::tag_recv, worker, dt_bytes(buffer, count, dt), tag, tag_mask, 0, st >= 0 ? req : status_as_ptr(st));
  }, worker, buffer, count, dt, tag, tag_mask, req);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt,
                                                       void* message, void* cb) {
  UCP_REAL(ucp_tag_msg_recv_nb, ucs_status_ptr_t (*)(ucp_worker_h, void*, size_t, ucp_datatype_t, void*, void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_msg_recv, worker, dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, worker, buffer, count, dt, message, cb);
}

// Probing is polling: a found message is recorded (in full mode also every probe).
SIGMATRACE_EXPORT void* ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask, int remove,
                                         ucp_tag_recv_info* info) {
  UCP_REAL(ucp_tag_probe_nb, void* (*)(ucp_worker_h, ucp_tag_t, ucp_tag_t, int, ucp_tag_recv_info*), nullptr);
  void* msg = fn(worker, tag, tag_mask, remove, info);
  if (tracing(guard) && g_mode != TraceMode::aggregate && (msg || g_mode == TraceMode::full))
    record<EventType::ucx_op>(static_cast<uint64_t>(UcxOp::tag_probe), addr(worker), msg && info ? uint64_t{info->length} : 0,
           msg && info ? info->sender_tag : tag, tag_mask, uint64_t{0}, addr(msg), int64_t{msg ? UCS_OK : UCS_INPROGRESS},
           uint64_t{0}, uint64_t{0});
  return msg;
}

// ---- streams -------------------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, const void* param) {
  UCP_REAL(ucp_stream_send_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, const void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_send, ep, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, ep, buffer, count, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void* buffer, size_t count, size_t* length,
                                                       const void* param) {
  UCP_REAL(ucp_stream_recv_nbx, ucs_status_ptr_t (*)(ucp_ep_h, void*, size_t, size_t*, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    // Completed at once: the received length; otherwise the buffer's capacity.
    op_done(UcxOp::stream_recv, ep, r == nullptr && length ? uint64_t{*length} : nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, ep, buffer, count, length, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, void* cb,
                                                      unsigned flags) {
  UCP_REAL(ucp_stream_send_nb, ucs_status_ptr_t (*)(ucp_ep_h, const void*, size_t, ucp_datatype_t, void*, unsigned),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_send, ep, dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, ep, buffer, count, dt, cb, flags);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void* buffer, size_t count, ucp_datatype_t dt, void* cb,
                                                      size_t* length, unsigned flags) {
  UCP_REAL(ucp_stream_recv_nb, ucs_status_ptr_t (*)(ucp_ep_h, void*, size_t, ucp_datatype_t, void*, size_t*, unsigned),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_recv, ep, r == nullptr && length ? uint64_t{*length} : dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, ep, buffer, count, dt, cb, length, flags);
}

// ---- active messages -----------------------------------------------------------------------------

// am_send: tag holds the AM id; bytes the payload (the header is not counted).
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void* header, size_t header_length,
                                                   const void* buffer, size_t count, const void* param) {
  UCP_REAL(ucp_am_send_nbx, ucs_status_ptr_t (*)(ucp_ep_h, unsigned, const void*, size_t, const void*, size_t, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_send, ep, nbx_bytes(buffer, count, param), id, header_length, 0, r);
  }, ep, id, header, header_length, buffer, count, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void* buffer, size_t count, ucp_datatype_t dt,
                                                  void* cb, unsigned flags) {
  UCP_REAL(ucp_am_send_nb, ucs_status_ptr_t (*)(ucp_ep_h, uint16_t, const void*, size_t, ucp_datatype_t, void*, unsigned),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_send, ep, dt_bytes(buffer, count, dt), id, 0, 0, r);
  }, ep, id, buffer, count, dt, cb, flags);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void* data_desc, void* buffer, size_t count,
                                                        const void* param) {
  UCP_REAL(ucp_am_recv_data_nbx, ucs_status_ptr_t (*)(ucp_worker_h, void*, void*, size_t, const void*),
           status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_recv_data, worker, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, worker, data_desc, buffer, count, param);
}

// Handlers are registered once (control path): the application's callback and argument are kept in
// a static slot and UCP calls a trampoline that records the arrival and calls them.
SIGMATRACE_EXPORT ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker, const ucp_am_handler_param* param) {
  UCP_REAL(ucp_worker_set_am_recv_handler, ucs_status_t (*)(ucp_worker_h, const ucp_am_handler_param*), UCS_ERR_NO_MEMORY);
  if (!guard.outer || !active() || !param || !(param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ID) ||
      !(param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_CB) || !param->cb)
    return fn(worker, param);
  AmHandler* h = am_handler_slot(worker, param->id);
  if (!h) return fn(worker, param);
  h->cb = param->cb;
  h->arg = (param->field_mask & UCP_AM_HANDLER_PARAM_FIELD_ARG) ? param->arg : nullptr;
  ucp_am_handler_param p = *param;
  p.field_mask |= UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.cb = &am_recv_trampoline;
  p.arg = h;
  return fn(worker, &p);
}

SIGMATRACE_EXPORT ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb, void* arg,
                                                         uint32_t flags) {
  UCP_REAL(ucp_worker_set_am_handler, ucs_status_t (*)(ucp_worker_h, uint16_t, ucp_am_callback_t, void*, uint32_t),
           UCS_ERR_NO_MEMORY);
  if (!guard.outer || !active() || !cb) return fn(worker, id, cb, arg, flags);
  // UCP keeps one handler per id, whichever API set it: the slot (and the recorded id, which the
  // analysis matches against ucp_am_send_nb's) is the plain id.
  AmHandler* h = am_handler_slot(worker, id);
  if (!h) return fn(worker, id, cb, arg, flags);
  h->old_cb = cb;
  h->arg = arg;
  return fn(worker, id, &am_old_trampoline, h, flags);
}

// ---- flush and fence -----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker, const void* param) {
  UCP_REAL(ucp_worker_flush_nbx, ucs_status_ptr_t (*)(ucp_worker_h, const void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, r);
  }, worker, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const void* param) {
  UCP_REAL(ucp_ep_flush_nbx, ucs_status_ptr_t (*)(ucp_ep_h, const void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, r);
  }, ep, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags, void* cb) {
  UCP_REAL(ucp_worker_flush_nb, ucs_status_ptr_t (*)(ucp_worker_h, unsigned, void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, r);
  }, worker, flags, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, void* cb) {
  UCP_REAL(ucp_ep_flush_nb, ucs_status_ptr_t (*)(ucp_ep_h, unsigned, void*), status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, r);
  }, ep, flags, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_worker_flush(ucp_worker_h worker) {
  UCP_REAL(ucp_worker_flush, ucs_status_t (*)(ucp_worker_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, status_as_ptr(st));
  }, worker);
}

SIGMATRACE_EXPORT ucs_status_t ucp_ep_flush(ucp_ep_h ep) {
  UCP_REAL(ucp_ep_flush, ucs_status_t (*)(ucp_ep_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, status_as_ptr(st));
  }, ep);
}

SIGMATRACE_EXPORT ucs_status_t ucp_worker_fence(ucp_worker_h worker) {
  UCP_REAL(ucp_worker_fence, ucs_status_t (*)(ucp_worker_h), UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::worker_fence, worker, 0, 0, 0, 0, status_as_ptr(st));
  }, worker);
}

// ---- request completion --------------------------------------------------------------------------
// A request is done when a test returns anything but UCS_INPROGRESS: recorded then (tests that
// return INPROGRESS are polling and cost one compare). Requests completed only through their
// callback, with no test, are not seen here (see docs/ucx-ofi.md).

SIGMATRACE_EXPORT ucs_status_t ucp_request_check_status(void* request) {
  auto fn = real_function<ucs_status_t (*)(void*)>(ucx::real::ucp_request_check_status);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active()) request_done(request, st, 0, 0);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_request_test(void* request, ucp_tag_recv_info* info) {
  auto fn = real_function<ucs_status_t (*)(void*, ucp_tag_recv_info*)>(ucx::real::ucp_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, info);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, info && st == UCS_OK ? info->sender_tag : 0, info && st == UCS_OK ? info->length : 0);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_request_test(void* request, ucp_tag_recv_info* info) {
  auto fn = real_function<ucs_status_t (*)(void*, ucp_tag_recv_info*)>(ucx::real::ucp_tag_recv_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, info);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, info && st == UCS_OK ? info->sender_tag : 0, info && st == UCS_OK ? info->length : 0);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_stream_recv_request_test(void* request, size_t* length) {
  auto fn = real_function<ucs_status_t (*)(void*, size_t*)>(ucx::real::ucp_stream_recv_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, length);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, 0, length && st == UCS_OK ? *length : 0);
  return st;
}

// A request the program frees: completed by then. A request completed through its callback (Open
// MPI's MPI_Irecv + MPI_Wait) is never tested; its free is the latest it can have completed.
namespace {
void free_request(RealSymbol& real, void* request) {
  auto fn = real_function<void (*)(void*)>(real);
  if (!fn) return;
  if (g_mode != TraceMode::aggregate && !Reentry::inside() && active()) record<EventType::ucx_request_free>(addr(request));
  fn(request);
}
}  // namespace

SIGMATRACE_EXPORT void ucp_request_free(void* request) { free_request(ucx::real::ucp_request_free, request); }
SIGMATRACE_EXPORT void ucp_request_release(void* request) { free_request(ucx::real::ucp_request_release, request); }

// ---- progress ------------------------------------------------------------------------------------

SIGMATRACE_EXPORT unsigned ucp_worker_progress(ucp_worker_h worker) {
  auto fn = real_function<unsigned (*)(ucp_worker_h)>(ucx::real::ucp_worker_progress);
  if (__builtin_expect(fn == nullptr, 0)) return 0;
  const unsigned n = fn(worker);
  if (__builtin_expect(n != 0 && g_record_progress, 0) && active()) record<EventType::ucx_worker_progress>(addr(worker), uint64_t{n});
  return n;
}

namespace sigmatrace::profiler {
namespace {
// For the dlsym/dlvsym hooks (dl_resolver_hooks.cpp): a program resolving a UCP function by name
// on libucp's handle gets the shim.
const InterposedSymbol kUcpSymbols[] = {
#define SIGMATRACE_INTERPOSED(name) {&ucx::real::name, reinterpret_cast<void*>(&::name), &ucx::g_active},
    SIGMATRACE_UCP_SYMBOLS(SIGMATRACE_INTERPOSED)
#undef SIGMATRACE_INTERPOSED
};
}  // namespace
extern const InterposedSymbolTable kUcpInterposedSymbols = {kUcpSymbols, sizeof kUcpSymbols / sizeof kUcpSymbols[0]};
}  // namespace sigmatrace::profiler
