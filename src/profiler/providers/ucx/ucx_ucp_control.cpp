// The UCP shims of the control path: workers (with the address peers connect to), endpoints
// (with the peer's worker address or socket address), memory mapping and rkeys, and the
// registration of active-message handlers, whose callbacks are then called through a trampoline
// that records each arrival. Also the ucx provider's registration. Each shim calls the real
// function, then records one event (simple/full); errors are recorded in every mode. Return values
// and errno are the real function's.
#include <dlfcn.h>

#include <cstring>

#include "profiler/providers/provider.h"
#include "profiler/providers/ucx/ucx_ucp_internal.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler {
namespace ucx {

std::atomic<bool> g_active{false};
TraceMode g_mode = TraceMode::simple;
bool g_record_progress = false;
constinit thread_local UctLane t_uct_lane __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr};

namespace real {
#define SIGMATRACE_REAL_SYMBOL(name) RealSymbol name{#name, "libucp.so.0", {}, {}};
SIGMATRACE_UCP_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace real

namespace {

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

// ---- workers and endpoints ------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_t ucp_worker_create(ucp_context_h context, const void* params, ucp_worker_h* worker_p) {
  UCP_REAL(ucp_worker_create, UCS_ERR_NO_MEMORY);
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
  auto fn = real_function<decltype(&::ucp_worker_destroy)>(ucx::real::ucp_worker_destroy);
  if (!fn) return;
  Reentry guard;
  fn(worker);
  if (tracing(guard) && control_events()) record<EventType::ucx_worker_destroy>(addr(worker));
}

// The prefix of a packed worker address recorded at ucp_ep_create (the address carries no length;
// every packed address is longer than this: a header byte and the 64-bit worker UUID come first).
constexpr uint32_t kPeerAddressPrefixBytes = 16;

SIGMATRACE_EXPORT ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params* params, ucp_ep_h* ep_p) {
  UCP_REAL(ucp_ep_create, UCS_ERR_NO_MEMORY);
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
  UCP_REAL(ucp_ep_close_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  ucs_status_ptr_t r = fn(ep, param);
  ep_closed(guard, ep, r);
  return r;
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode) {
  UCP_REAL(ucp_ep_close_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  ucs_status_ptr_t r = fn(ep, mode);
  ep_closed(guard, ep, r);
  return r;
}

SIGMATRACE_EXPORT void ucp_ep_destroy(ucp_ep_h ep) {
  auto fn = real_function<decltype(&::ucp_ep_destroy)>(ucx::real::ucp_ep_destroy);
  if (!fn) return;
  Reentry guard;
  fn(ep);
  ep_closed(guard, ep, nullptr);
}

// ---- memory and rkeys ----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_t ucp_mem_map(ucp_context_h context, const void* params, ucp_mem_h* memh_p) {
  UCP_REAL(ucp_mem_map, UCS_ERR_NO_MEMORY);
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
  UCP_REAL(ucp_mem_unmap, UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, memh);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::mem_unmap, memh, st);
  else if (control_events()) record<EventType::ucx_mem_unmap>(addr(memh));
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void** buffer, size_t* size) {
  UCP_REAL(ucp_rkey_pack, UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(context, memh, buffer, size);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::rkey_pack, memh, st);
  else if (control_events()) record<EventType::ucx_rkey_pack>(addr(memh), uint64_t{*size});
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void* buffer, ucp_rkey_h* rkey_p) {
  UCP_REAL(ucp_ep_rkey_unpack, UCS_ERR_NO_MEMORY);
  ucs_status_t st = fn(ep, buffer, rkey_p);
  if (!tracing(guard)) return st;
  if (st != UCS_OK) record_error(UcxOp::rkey_unpack, ep, st);
  else if (control_events()) record<EventType::ucx_rkey_unpack>(addr(ep), addr(*rkey_p));
  return st;
}

// ---- active-message handlers ---------------------------------------------------------------------

// Handlers are registered once (control path): the application's callback and argument are kept in
// a static slot and UCP calls a trampoline that records the arrival and calls them.
SIGMATRACE_EXPORT ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker, const ucp_am_handler_param* param) {
  UCP_REAL(ucp_worker_set_am_recv_handler, UCS_ERR_NO_MEMORY);
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
  UCP_REAL(ucp_worker_set_am_handler, UCS_ERR_NO_MEMORY);
  if (!guard.outer || !active() || !cb) return fn(worker, id, cb, arg, flags);
  // UCP keeps one handler per id, whichever API set it: the slot (and the recorded id, which the
  // analysis matches against ucp_am_send_nb's) is the plain id.
  AmHandler* h = am_handler_slot(worker, id);
  if (!h) return fn(worker, id, cb, arg, flags);
  h->old_cb = cb;
  h->arg = arg;
  return fn(worker, id, &am_old_trampoline, h, flags);
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
