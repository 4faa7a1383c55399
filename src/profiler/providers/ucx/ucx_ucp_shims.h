// The UCP functions libsigmatrace.so exports in place of libucp's (libucp exports them
// unversioned; an application reaches them through its PLT): their declarations, which the compiler
// checks against each shim's definition (ucx_ucp_control.cpp, ucx_ucp_data_path.cpp) and from which
// each shim takes the type of the real function; the list the resolver hooks' table and the export
// map are built from; and where the real functions are looked up.
#pragma once
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/providers/ucx/ucx_abi.h"

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

namespace sigmatrace::profiler::ucx::real {
#define SIGMATRACE_REAL_SYMBOL(name) extern RealSymbol name;
SIGMATRACE_UCP_SYMBOLS(SIGMATRACE_REAL_SYMBOL)
#undef SIGMATRACE_REAL_SYMBOL
}  // namespace sigmatrace::profiler::ucx::real

// The shims are C functions named as UCP's, declared with UCP's types (ucx_abi.h).
using namespace sigmatrace::profiler::ucx::abi;

SIGMATRACE_EXPORT ucs_status_t ucp_worker_create(ucp_context_h context, const void* params, ucp_worker_h* worker_p);
SIGMATRACE_EXPORT void ucp_worker_destroy(ucp_worker_h worker);
SIGMATRACE_EXPORT ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params* params, ucp_ep_h* ep_p);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode);
SIGMATRACE_EXPORT void ucp_ep_destroy(ucp_ep_h ep);
SIGMATRACE_EXPORT ucs_status_t ucp_mem_map(ucp_context_h context, const void* params, ucp_mem_h* memh_p);
SIGMATRACE_EXPORT ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh);
SIGMATRACE_EXPORT ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void** buffer, size_t* size);
SIGMATRACE_EXPORT ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void* buffer, ucp_rkey_h* rkey_p);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey, const void* param);
SIGMATRACE_EXPORT ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey);
SIGMATRACE_EXPORT ucs_status_t ucp_get_nbi(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey, void* cb);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void* buffer, size_t length, uint64_t remote_addr, ucp_rkey_h rkey, void* cb);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, int opcode, const void* buffer, size_t count, uint64_t remote_addr, ucp_rkey_h rkey, const void* param);
SIGMATRACE_EXPORT ucs_status_t ucp_atomic_post(ucp_ep_h ep, int opcode, uint64_t value, size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, int opcode, uint64_t value, void* result, size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey, void* cb);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, ucp_tag_t tag, ucp_tag_t tag_mask, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void* buffer, size_t count, void* message, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag, void* cb);
SIGMATRACE_EXPORT ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag, void* req);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag, void* cb);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag, ucp_tag_t tag_mask, void* cb);
SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt, ucp_tag_t tag, ucp_tag_t tag_mask, void* req);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void* buffer, size_t count, ucp_datatype_t dt, void* message, void* cb);
SIGMATRACE_EXPORT void* ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask, int remove, ucp_tag_recv_info* info);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void* buffer, size_t count, size_t* length, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void* buffer, size_t count, ucp_datatype_t dt, void* cb, unsigned flags);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void* buffer, size_t count, ucp_datatype_t dt, void* cb, size_t* length, unsigned flags);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void* header, size_t header_length, const void* buffer, size_t count, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void* buffer, size_t count, ucp_datatype_t dt, void* cb, unsigned flags);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void* data_desc, void* buffer, size_t count, const void* param);
SIGMATRACE_EXPORT ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker, const ucp_am_handler_param* param);
SIGMATRACE_EXPORT ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb, void* arg, uint32_t flags);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const void* param);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags, void* cb);
SIGMATRACE_EXPORT ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, void* cb);
SIGMATRACE_EXPORT ucs_status_t ucp_worker_flush(ucp_worker_h worker);
SIGMATRACE_EXPORT ucs_status_t ucp_ep_flush(ucp_ep_h ep);
SIGMATRACE_EXPORT ucs_status_t ucp_worker_fence(ucp_worker_h worker);
SIGMATRACE_EXPORT ucs_status_t ucp_request_check_status(void* request);
SIGMATRACE_EXPORT ucs_status_t ucp_request_test(void* request, ucp_tag_recv_info* info);
SIGMATRACE_EXPORT ucs_status_t ucp_tag_recv_request_test(void* request, ucp_tag_recv_info* info);
SIGMATRACE_EXPORT ucs_status_t ucp_stream_recv_request_test(void* request, size_t* length);
SIGMATRACE_EXPORT void ucp_request_free(void* request);
SIGMATRACE_EXPORT void ucp_request_release(void* request);
SIGMATRACE_EXPORT unsigned ucp_worker_progress(ucp_worker_h worker);
