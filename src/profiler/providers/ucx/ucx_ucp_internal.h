// What the UCP shims' two files (ucx_ucp_control.cpp: workers, endpoints, memory, rkeys,
// active-message handlers; ucx_ucp_data_path.cpp: operations, flush, request completion, progress)
// share: the one body of a traced operation, and how it is recorded. Read on application threads:
// no locks, no system calls, no allocation.
#pragma once
#include "profiler/providers/ucx/ucx_state.h"
#include "profiler/providers/ucx/ucx_ucp_shims.h"

namespace sigmatrace::profiler::ucx {

using namespace abi;
using format::AggregateKey;
using format::UcxPeerKind;

extern bool g_record_progress;  // full mode: ucp_worker_progress calls that made progress are recorded
// When the traced operation was called: an operation is stamped at its call, not at its return
// (a blocking eager send can be received before it returns; its arrow must not run backwards).
inline thread_local uint64_t t_op_tsc __attribute__((tls_model("initial-exec"))) = 0;

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

}  // namespace sigmatrace::profiler::ucx

// The real function of the shim `name`, or `fail` returned when libucp lacks it; then the
// outermost-call guard.
#define UCP_REAL(name, fail)                                                   \
  auto fn = ::sigmatrace::profiler::real_function<decltype(&::name)>(::sigmatrace::profiler::ucx::real::name); \
  if (__builtin_expect(fn == nullptr, 0)) return fail;                         \
  ::sigmatrace::profiler::ucx::Reentry guard
