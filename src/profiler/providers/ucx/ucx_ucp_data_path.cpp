// The UCP shims of the data path: put/get/atomic, tag/stream/active-message send and receive in
// the nbx, nb, nbr and nbi families, flush and fence, request completion, and ucp_worker_progress.
// Each calls the real function, then records one event (simple/full) or one counter update
// (aggregate); errors are recorded in every mode. Return values and errno are the real function's.
//
// They run on application threads: no locks, no system calls, no allocation.
// ucp_worker_progress is called millions of times per run: it costs one indirect call and one
// test unless it made progress in full mode.
#include "profiler/providers/ucx/ucx_ucp_internal.h"

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ucx;

// ---- RMA and atomics -----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr,
                                               ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_put_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::put, ep, nbx_bytes(buffer, count, param), 0, 0, remote_addr, r);
  }, ep, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr,
                                               ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_get_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::get, ep, nbx_bytes(buffer, count, param), 0, 0, remote_addr, r);
  }, ep, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey) {
  UCP_REAL(ucp_put_nbi, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::put, ep, length, 0, 0, remote_addr, status_as_ptr(st));
  }, ep, buffer, length, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_t ucp_get_nbi(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey) {
  UCP_REAL(ucp_get_nbi, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::get, ep, length, 0, 0, remote_addr, status_as_ptr(st));
  }, ep, buffer, length, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr,
                                              ucp_rkey_h rkey, void* cb) {
  UCP_REAL(ucp_put_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::put, ep, length, 0, 0, remote_addr, r);
  }, ep, buffer, length, remote_addr, rkey, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey,
                                              void* cb) {
  UCP_REAL(ucp_get_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::get, ep, length, 0, 0, remote_addr, r);
  }, ep, buffer, length, remote_addr, rkey, cb);
}

// Atomics: tag holds the UCP atomic opcode.
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, int opcode, const void* buffer, size_t count,
                                                     uint64_t remote_addr, ucp_rkey_h rkey, const void* param) {
  UCP_REAL(ucp_atomic_op_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    auto* p = static_cast<const ucp_request_param*>(param);
    const bool fetch = p && (p->op_attr_mask & (1u << 5)) && p->reply_buffer;  // UCP_OP_ATTR_FIELD_REPLY_BUFFER
    op_done(fetch ? UcxOp::atomic_fetch : UcxOp::atomic_post, ep, nbx_bytes(buffer, count, param), static_cast<uint64_t>(opcode), 0,
            remote_addr, r);
  }, ep, opcode, buffer, count, remote_addr, rkey, param);
}

SIGMATRACE_EXPORT ucs_status_t ucp_atomic_post(ucp_ep_h ep, int opcode, uint64_t value, size_t op_size, uint64_t remote_addr,
                                               ucp_rkey_h rkey) {
  UCP_REAL(ucp_atomic_post, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::atomic_post, ep, op_size, static_cast<uint64_t>(opcode), 0, remote_addr, status_as_ptr(st));
  }, ep, opcode, value, op_size, remote_addr, rkey);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, int opcode, uint64_t value, void* result, size_t op_size,
                                                       uint64_t remote_addr, ucp_rkey_h rkey, void* cb) {
  UCP_REAL(ucp_atomic_fetch_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::atomic_fetch, ep, op_size, static_cast<uint64_t>(opcode), 0, remote_addr, r);
  }, ep, opcode, value, result, op_size, remote_addr, rkey, cb);
}

// ---- tag matching --------------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                                    const void* param) {
  UCP_REAL(ucp_tag_send_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send, ep, nbx_bytes(buffer, count, param), tag, 0, 0, r);
  }, ep, buffer, count, tag, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                                         const void* param) {
  UCP_REAL(ucp_tag_send_sync_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send_sync, ep, nbx_bytes(buffer, count, param), tag, 0, 0, r);
  }, ep, buffer, count, tag, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, ucp_tag_t tag,
                                                    ucp_tag_t tag_mask, const void* param) {
  UCP_REAL(ucp_tag_recv_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_recv, worker, nbx_bytes(buffer, count, param), tag, tag_mask, 0, r);
  }, worker, buffer, count, tag, tag_mask, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, void* message,
                                                        const void* param) {
  UCP_REAL(ucp_tag_msg_recv_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_msg_recv, worker, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, worker, buffer, count, message, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt,
                                                   ucp_tag_t tag, void* cb) {
  UCP_REAL(ucp_tag_send_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send, ep, dt_bytes(buffer, count, dt), tag, 0, 0, r);
  }, ep, buffer, count, dt, tag, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag,
                                                void* req) {
  UCP_REAL(ucp_tag_send_nbr, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::tag_send, ep, dt_bytes(buffer, count, dt), tag, 0, 0, st == UCS_INPROGRESS ? req : status_as_ptr(st));
  }, ep, buffer, count, dt, tag, req);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt,
                                                        ucp_tag_t tag, void* cb) {
  UCP_REAL(ucp_tag_send_sync_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_send_sync, ep, dt_bytes(buffer, count, dt), tag, 0, 0, r);
  }, ep, buffer, count, dt, tag, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt,
                                                   ucp_tag_t tag, ucp_tag_t tag_mask, void* cb) {
  UCP_REAL(ucp_tag_recv_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_recv, worker, dt_bytes(buffer, count, dt), tag, tag_mask, 0, r);
  }, worker, buffer, count, dt, tag, tag_mask, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag,
                                                ucp_tag_t tag_mask, void* req) {
  UCP_REAL(ucp_tag_recv_nbr, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::tag_recv, worker, dt_bytes(buffer, count, dt), tag, tag_mask, 0, st >= 0 ? req : status_as_ptr(st));
  }, worker, buffer, count, dt, tag, tag_mask, req);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt,
                                                       void* message, void* cb) {
  UCP_REAL(ucp_tag_msg_recv_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::tag_msg_recv, worker, dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, worker, buffer, count, dt, message, cb);
}

// Probing is polling: a found message is recorded (in full mode also every probe).
SIGMATRACE_EXPORT void* ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask, int remove,
                                         ucp_tag_recv_info* info) {
  UCP_REAL(ucp_tag_probe_nb, nullptr);
  void* msg = fn(worker, tag, tag_mask, remove, info);
  if (tracing(guard) && g_mode != TraceMode::aggregate && (msg || g_mode == TraceMode::full))
    record<EventType::ucx_op>(static_cast<uint64_t>(UcxOp::tag_probe), addr(worker), msg && info ? uint64_t{info->length} : 0,
           msg && info ? info->sender_tag : tag, tag_mask, uint64_t{0}, addr(msg), int64_t{msg ? UCS_OK : UCS_INPROGRESS},
           uint64_t{0}, uint64_t{0});
  return msg;
}

// ---- streams -------------------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, const void* param) {
  UCP_REAL(ucp_stream_send_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_send, ep, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, ep, buffer, count, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void* buffer, size_t count, size_t* length,
                                                       const void* param) {
  UCP_REAL(ucp_stream_recv_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    // Completed at once: the received length; otherwise the buffer's capacity.
    op_done(UcxOp::stream_recv, ep, r == nullptr && length ? uint64_t{*length} : nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, ep, buffer, count, length, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, void* cb,
                                                      unsigned flags) {
  UCP_REAL(ucp_stream_send_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_send, ep, dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, ep, buffer, count, dt, cb, flags);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void* buffer, size_t count, ucp_datatype_t dt, void* cb,
                                                      size_t* length, unsigned flags) {
  UCP_REAL(ucp_stream_recv_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::stream_recv, ep, r == nullptr && length ? uint64_t{*length} : dt_bytes(buffer, count, dt), 0, 0, 0, r);
  }, ep, buffer, count, dt, cb, length, flags);
}

// ---- active messages -----------------------------------------------------------------------------

// am_send: tag holds the AM id; bytes the payload (the header is not counted).
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void* header, size_t header_length,
                                                   const void* buffer, size_t count, const void* param) {
  UCP_REAL(ucp_am_send_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_send, ep, nbx_bytes(buffer, count, param), id, header_length, 0, r);
  }, ep, id, header, header_length, buffer, count, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void* buffer, size_t count, ucp_datatype_t dt,
                                                  void* cb, unsigned flags) {
  UCP_REAL(ucp_am_send_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_send, ep, dt_bytes(buffer, count, dt), id, 0, 0, r);
  }, ep, id, buffer, count, dt, cb, flags);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void* data_desc, void* buffer, size_t count,
                                                        const void* param) {
  UCP_REAL(ucp_am_recv_data_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::am_recv_data, worker, nbx_bytes(buffer, count, param), 0, 0, 0, r);
  }, worker, data_desc, buffer, count, param);
}

// ---- flush and fence -----------------------------------------------------------------------------

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker, const void* param) {
  UCP_REAL(ucp_worker_flush_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, r);
  }, worker, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const void* param) {
  UCP_REAL(ucp_ep_flush_nbx, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, r);
  }, ep, param);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags, void* cb) {
  UCP_REAL(ucp_worker_flush_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, r);
  }, worker, flags, cb);
}

SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, void* cb) {
  UCP_REAL(ucp_ep_flush_nb, status_as_ptr(UCS_ERR_NO_MEMORY));
  return traced_op(fn, guard, [&](ucs_status_ptr_t r) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, r);
  }, ep, flags, cb);
}

SIGMATRACE_EXPORT ucs_status_t ucp_worker_flush(ucp_worker_h worker) {
  UCP_REAL(ucp_worker_flush, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::worker_flush, worker, 0, 0, 0, 0, status_as_ptr(st));
  }, worker);
}

SIGMATRACE_EXPORT ucs_status_t ucp_ep_flush(ucp_ep_h ep) {
  UCP_REAL(ucp_ep_flush, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::ep_flush, ep, 0, 0, 0, 0, status_as_ptr(st));
  }, ep);
}

SIGMATRACE_EXPORT ucs_status_t ucp_worker_fence(ucp_worker_h worker) {
  UCP_REAL(ucp_worker_fence, UCS_ERR_NO_MEMORY);
  return traced_op(fn, guard, [&](ucs_status_t st) {
    op_done(UcxOp::worker_fence, worker, 0, 0, 0, 0, status_as_ptr(st));
  }, worker);
}

// ---- request completion --------------------------------------------------------------------------
// A request is done when a test returns anything but UCS_INPROGRESS: recorded then (tests that
// return INPROGRESS are polling and cost one compare). Requests completed only through their
// callback, with no test, are not seen here (see docs/ucx-ofi.md).

namespace {
void request_done(const void* request, ucs_status_t status, uint64_t tag, uint64_t length) {
  if (g_mode != TraceMode::aggregate) record<EventType::ucx_request_done>(addr(request), int64_t{status}, tag, length);
  if (status < 0) record_error(UcxOp::request, request, status);
}
}  // namespace

SIGMATRACE_EXPORT ucs_status_t ucp_request_check_status(void* request) {
  auto fn = real_function<decltype(&::ucp_request_check_status)>(ucx::real::ucp_request_check_status);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active()) request_done(request, st, 0, sigmatrace::format::kUcxLengthUnknown);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_request_test(void* request, ucp_tag_recv_info* info) {
  auto fn = real_function<decltype(&::ucp_request_test)>(ucx::real::ucp_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, info);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, info && st == UCS_OK ? info->sender_tag : 0, info && st == UCS_OK ? info->length : sigmatrace::format::kUcxLengthUnknown);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_request_test(void* request, ucp_tag_recv_info* info) {
  auto fn = real_function<decltype(&::ucp_tag_recv_request_test)>(ucx::real::ucp_tag_recv_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, info);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, info && st == UCS_OK ? info->sender_tag : 0, info && st == UCS_OK ? info->length : sigmatrace::format::kUcxLengthUnknown);
  return st;
}

SIGMATRACE_EXPORT ucs_status_t ucp_stream_recv_request_test(void* request, size_t* length) {
  auto fn = real_function<decltype(&::ucp_stream_recv_request_test)>(ucx::real::ucp_stream_recv_request_test);
  if (!fn) return UCS_ERR_NO_MEMORY;
  ucs_status_t st = fn(request, length);
  if (__builtin_expect(st != UCS_INPROGRESS, 0) && !Reentry::inside() && active())
    request_done(request, st, 0, length && st == UCS_OK ? *length : sigmatrace::format::kUcxLengthUnknown);
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
  auto fn = real_function<decltype(&::ucp_worker_progress)>(ucx::real::ucp_worker_progress);
  if (__builtin_expect(fn == nullptr, 0)) return 0;
  const unsigned n = fn(worker);
  if (__builtin_expect(n != 0 && g_record_progress, 0) && active()) record<EventType::ucx_worker_progress>(addr(worker), uint64_t{n});
  return n;
}
