// The UCT level: uct_iface_open (exported by libuct, called by libucp through its PLT) is hooked,
// and the data-path entries of the new interface's ops table (uct_iface_t embeds its own copy of
// the transport's table, so patching it affects that interface only) are replaced by wrappers.
// Each wrapper calls the real entry and notes, per thread, the interface and endpoint (the UCP
// lane) that carried the data: the UCP shims put them into their ucx_op event. Full mode also
// records every UCT operation; aggregate mode counts them per interface and op.
// uct_ep_create is hooked to record which interface each lane endpoint belongs to.
//
// Wrappers run on application threads: no locks, no system calls, no allocation.
#include <cstdio>
#include <cstring>

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/ucx/ucx_state.h"
#include "profiler/runtime/log.h"

namespace sigmatrace::profiler::ucx {
namespace {

using namespace abi;
using format::AggregateKey;
using format::UctOp;

RealSymbol g_real_iface_open{"uct_iface_open", "libuct.so.0", {}, {}};
RealSymbol g_real_iface_close{"uct_iface_close", "libuct.so.0", {}, {}};
RealSymbol g_real_ep_create{"uct_ep_create", "libuct.so.0", {}, {}};

constexpr uint32_t kMaxIfaces = 512;
struct IfaceState {
  std::atomic<uct_iface*> iface;  // null: free; published after `real` is filled
  std::atomic<uint8_t> claimed;
  uct_iface_ops real;             // the entries the interface had before patching
};
IfaceState g_ifaces[kMaxIfaces];
std::atomic<uint32_t> g_iface_high_water{0};

thread_local IfaceState* t_last_iface __attribute__((tls_model("initial-exec"))) = nullptr;

[[gnu::always_inline]] inline IfaceState* find_iface(const uct_iface* iface) {
  IfaceState* s = t_last_iface;
  if (__builtin_expect(s != nullptr && s->iface.load(std::memory_order_relaxed) == iface, 1)) return s;
  const uint32_t n = g_iface_high_water.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (g_ifaces[i].iface.load(std::memory_order_acquire) == iface) {
      t_last_iface = &g_ifaces[i];
      return &g_ifaces[i];
    }
  return nullptr;
}

std::atomic<bool> g_missing_logged{false};
[[gnu::noinline, gnu::cold]] void iface_not_tracked() {
  if (!g_missing_logged.exchange(true)) log_line("ucx: a UCT interface reached a wrapper without being tracked");
}

// NO_RESOURCE (-2) is back-pressure (UCP retries later), not a failure.
constexpr int64_t kNoResource = -2;

[[gnu::always_inline]] inline void note(uct_ep* ep, UctOp op, uint64_t bytes, int64_t status) {
  t_uct_lane = {ep->iface, ep};
  if (!active()) return;
  if (g_mode == TraceMode::aggregate) {
    if (status >= 0) aggregate_add(AggregateKey::ucx_uct_op, reinterpret_cast<uintptr_t>(ep->iface), static_cast<uint64_t>(op), bytes);
  } else if (g_mode == TraceMode::full) {
    record<EventType::ucx_uct_op>(reinterpret_cast<uintptr_t>(ep->iface), reinterpret_cast<uintptr_t>(ep), static_cast<uint64_t>(op),
           bytes, status);
  }
  if (__builtin_expect(status < 0 && status != kNoResource, 0)) record_error(UcxOp::uct_op, ep, status);
}

#define UCT_STATE(ep)                                  \
  IfaceState* s = find_iface((ep)->iface);             \
  if (__builtin_expect(s == nullptr, 0)) {             \
    iface_not_tracked();                               \
    return -1; /* UCS_ERR_NO_MESSAGE-like failure */   \
  }

ucs_status_t put_short(uct_ep_h ep, const void* b, unsigned len, uint64_t ra, uct_rkey_t rk) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_put_short(ep, b, len, ra, rk);
  note(ep, UctOp::put_short, len, st);
  return st;
}
ssize_t put_bcopy(uct_ep_h ep, uct_pack_callback_t pack, void* arg, uint64_t ra, uct_rkey_t rk) {
  UCT_STATE(ep);
  ssize_t n = s->real.ep_put_bcopy(ep, pack, arg, ra, rk);
  note(ep, UctOp::put_bcopy, n > 0 ? static_cast<uint64_t>(n) : 0, n < 0 ? n : 0);
  return n;
}
ucs_status_t put_zcopy(uct_ep_h ep, const uct_iov* iov, size_t cnt, uint64_t ra, uct_rkey_t rk, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_put_zcopy(ep, iov, cnt, ra, rk, c);
  note(ep, UctOp::put_zcopy, iov_bytes(iov, cnt), st);
  return st;
}
ucs_status_t get_short(uct_ep_h ep, void* b, unsigned len, uint64_t ra, uct_rkey_t rk) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_get_short(ep, b, len, ra, rk);
  note(ep, UctOp::get_short, len, st);
  return st;
}
ucs_status_t get_bcopy(uct_ep_h ep, uct_unpack_callback_t un, void* arg, size_t len, uint64_t ra, uct_rkey_t rk, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_get_bcopy(ep, un, arg, len, ra, rk, c);
  note(ep, UctOp::get_bcopy, len, st);
  return st;
}
ucs_status_t get_zcopy(uct_ep_h ep, const uct_iov* iov, size_t cnt, uint64_t ra, uct_rkey_t rk, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_get_zcopy(ep, iov, cnt, ra, rk, c);
  note(ep, UctOp::get_zcopy, iov_bytes(iov, cnt), st);
  return st;
}
ucs_status_t am_short(uct_ep_h ep, uint8_t id, uint64_t hdr, const void* payload, unsigned len) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_am_short(ep, id, hdr, payload, len);
  note(ep, UctOp::am_short, len + sizeof hdr, st);
  return st;
}
ucs_status_t am_short_iov(uct_ep_h ep, uint8_t id, const uct_iov* iov, size_t cnt) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_am_short_iov(ep, id, iov, cnt);
  note(ep, UctOp::am_short_iov, iov_bytes(iov, cnt), st);
  return st;
}
ssize_t am_bcopy(uct_ep_h ep, uint8_t id, uct_pack_callback_t pack, void* arg, unsigned flags) {
  UCT_STATE(ep);
  ssize_t n = s->real.ep_am_bcopy(ep, id, pack, arg, flags);
  note(ep, UctOp::am_bcopy, n > 0 ? static_cast<uint64_t>(n) : 0, n < 0 ? n : 0);
  return n;
}
ucs_status_t am_zcopy(uct_ep_h ep, uint8_t id, const void* hdr, unsigned hlen, const uct_iov* iov, size_t cnt, unsigned flags,
                      uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_am_zcopy(ep, id, hdr, hlen, iov, cnt, flags, c);
  note(ep, UctOp::am_zcopy, hlen + iov_bytes(iov, cnt), st);
  return st;
}
ucs_status_t cswap64(uct_ep_h ep, uint64_t cmp, uint64_t swap, uint64_t ra, uct_rkey_t rk, uint64_t* res, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic_cswap64(ep, cmp, swap, ra, rk, res, c);
  note(ep, UctOp::atomic_cswap64, 8, st);
  return st;
}
ucs_status_t cswap32(uct_ep_h ep, uint32_t cmp, uint32_t swap, uint64_t ra, uct_rkey_t rk, uint32_t* res, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic_cswap32(ep, cmp, swap, ra, rk, res, c);
  note(ep, UctOp::atomic_cswap32, 4, st);
  return st;
}
ucs_status_t atomic32_post(uct_ep_h ep, unsigned op, uint32_t v, uint64_t ra, uct_rkey_t rk) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic32_post(ep, op, v, ra, rk);
  note(ep, UctOp::atomic32_post, 4, st);
  return st;
}
ucs_status_t atomic64_post(uct_ep_h ep, unsigned op, uint64_t v, uint64_t ra, uct_rkey_t rk) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic64_post(ep, op, v, ra, rk);
  note(ep, UctOp::atomic64_post, 8, st);
  return st;
}
ucs_status_t atomic32_fetch(uct_ep_h ep, unsigned op, uint32_t v, uint32_t* res, uint64_t ra, uct_rkey_t rk, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic32_fetch(ep, op, v, res, ra, rk, c);
  note(ep, UctOp::atomic32_fetch, 4, st);
  return st;
}
ucs_status_t atomic64_fetch(uct_ep_h ep, unsigned op, uint64_t v, uint64_t* res, uint64_t ra, uct_rkey_t rk, uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_atomic64_fetch(ep, op, v, res, ra, rk, c);
  note(ep, UctOp::atomic64_fetch, 8, st);
  return st;
}
ucs_status_t tag_eager_short(uct_ep_h ep, uct_tag_t tag, const void* data, size_t len) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_tag_eager_short(ep, tag, data, len);
  note(ep, UctOp::tag_eager_short, len, st);
  return st;
}
ssize_t tag_eager_bcopy(uct_ep_h ep, uct_tag_t tag, uint64_t imm, uct_pack_callback_t pack, void* arg, unsigned flags) {
  UCT_STATE(ep);
  ssize_t n = s->real.ep_tag_eager_bcopy(ep, tag, imm, pack, arg, flags);
  note(ep, UctOp::tag_eager_bcopy, n > 0 ? static_cast<uint64_t>(n) : 0, n < 0 ? n : 0);
  return n;
}
ucs_status_t tag_eager_zcopy(uct_ep_h ep, uct_tag_t tag, uint64_t imm, const uct_iov* iov, size_t cnt, unsigned flags,
                             uct_completion* c) {
  UCT_STATE(ep);
  ucs_status_t st = s->real.ep_tag_eager_zcopy(ep, tag, imm, iov, cnt, flags, c);
  note(ep, UctOp::tag_eager_zcopy, iov_bytes(iov, cnt), st);
  return st;
}
ucs_status_ptr_t tag_rndv_zcopy(uct_ep_h ep, uct_tag_t tag, const void* hdr, unsigned hlen, const uct_iov* iov, size_t cnt,
                                unsigned flags, uct_completion* c) {
  IfaceState* s = find_iface(ep->iface);
  if (__builtin_expect(s == nullptr, 0)) {
    iface_not_tracked();
    return reinterpret_cast<void*>(intptr_t{-1});
  }
  ucs_status_ptr_t r = s->real.ep_tag_rndv_zcopy(ep, tag, hdr, hlen, iov, cnt, flags, c);
  note(ep, UctOp::tag_rndv_zcopy, iov_bytes(iov, cnt), ptr_is_err(r) ? reinterpret_cast<intptr_t>(r) : 0);
  return r;
}

// Replaces the non-null data-path entries of iface's table (a null entry stays null: UCP tests some).
void patch_iface(uct_iface* iface, IfaceState* s) {
  uct_iface_ops& ops = iface->ops;
  s->real = ops;
#define PATCH(entry, wrapper) \
  if (ops.entry) ops.entry = &wrapper;
  PATCH(ep_put_short, put_short) PATCH(ep_put_bcopy, put_bcopy) PATCH(ep_put_zcopy, put_zcopy)
  PATCH(ep_get_short, get_short) PATCH(ep_get_bcopy, get_bcopy) PATCH(ep_get_zcopy, get_zcopy)
  PATCH(ep_am_short, am_short) PATCH(ep_am_short_iov, am_short_iov) PATCH(ep_am_bcopy, am_bcopy)
  PATCH(ep_am_zcopy, am_zcopy) PATCH(ep_atomic_cswap64, cswap64) PATCH(ep_atomic_cswap32, cswap32)
  PATCH(ep_atomic32_post, atomic32_post) PATCH(ep_atomic64_post, atomic64_post)
  PATCH(ep_atomic32_fetch, atomic32_fetch) PATCH(ep_atomic64_fetch, atomic64_fetch)
  PATCH(ep_tag_eager_short, tag_eager_short) PATCH(ep_tag_eager_bcopy, tag_eager_bcopy)
  PATCH(ep_tag_eager_zcopy, tag_eager_zcopy) PATCH(ep_tag_rndv_zcopy, tag_rndv_zcopy)
#undef PATCH
}

IfaceState* claim_iface_slot() {
  // Reuse a slot of a closed interface first (slots are never shrunk; find() scans to high water).
  uint32_t n = g_iface_high_water.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (g_ifaces[i].claimed.exchange(1) == 0) return &g_ifaces[i];
  uint32_t i = n;
  while (i < kMaxIfaces) {
    if (g_ifaces[i].claimed.exchange(1) == 0) {
      uint32_t hw = g_iface_high_water.load();
      while (hw < i + 1 && !g_iface_high_water.compare_exchange_weak(hw, i + 1)) {
      }
      return &g_ifaces[i];
    }
    ++i;
  }
  return nullptr;
}

}  // namespace
}  // namespace sigmatrace::profiler::ucx

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ucx;
using namespace sigmatrace::profiler::ucx::abi;

SIGMATRACE_EXPORT ucs_status_t uct_iface_open(void* md, void* worker, const uct_iface_params* params, const void* config,
                                              uct_iface_h* iface_p) {
  auto fn = real_function<ucs_status_t (*)(void*, void*, const uct_iface_params*, const void*, uct_iface_h*)>(g_real_iface_open);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(md, worker, params, config, iface_p);
  if (st != UCS_OK || !active()) return st;
  ErrnoKeeper keep;
  IfaceState* s = claim_iface_slot();
  if (!s) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) log_line("ucx: more than %u UCT interfaces; the next ones are not traced", kMaxIfaces);
    return st;
  }
  patch_iface(*iface_p, s);
  s->iface.store(*iface_p, std::memory_order_release);
  if (control_events()) {
    char name[96] = "?";
    if (params && (params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) && (params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE) &&
        params->tl_name)
      snprintf(name, sizeof name, "%s/%s", params->tl_name, params->dev_name ? params->dev_name : "");
    const uint64_t words[2] = {reinterpret_cast<uintptr_t>(*iface_p), reinterpret_cast<uintptr_t>(worker)};
    record_with_bytes<EventType::ucx_iface_open>(words, name, static_cast<uint32_t>(strlen(name)));
  }
  return st;
}

SIGMATRACE_EXPORT void uct_iface_close(uct_iface_h iface) {
  auto fn = real_function<void (*)(uct_iface_h)>(g_real_iface_close);
  if (!fn) return;
  const uint32_t n = g_iface_high_water.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (g_ifaces[i].iface.load(std::memory_order_acquire) == iface) {
      // Put the real entries back: UCX may still call through the table while closing.
      iface->ops = g_ifaces[i].real;
      if (active() && control_events()) record<EventType::ucx_iface_close>(reinterpret_cast<uintptr_t>(iface));
      g_ifaces[i].iface.store(nullptr, std::memory_order_release);
      g_ifaces[i].claimed.store(0, std::memory_order_release);
      fn(iface);
      return;
    }
  fn(iface);
}

SIGMATRACE_EXPORT ucs_status_t uct_ep_create(const uct_ep_params* params, uct_ep_h* ep_p) {
  auto fn = real_function<ucs_status_t (*)(const uct_ep_params*, uct_ep_h*)>(g_real_ep_create);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(params, ep_p);
  if (!active()) return st;
  ErrnoKeeper keep;
  if (st != UCS_OK) {
    record_error(UcxOp::uct_ep_create, params ? params->iface : nullptr, st);
  } else if (control_events()) {
    record<EventType::ucx_uct_ep_create>(reinterpret_cast<uintptr_t>((*ep_p)->iface), reinterpret_cast<uintptr_t>(*ep_p));
  }
  return st;
}
