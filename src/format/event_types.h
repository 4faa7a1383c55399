// The event schema, declared once for both halves (profiler writes, analysis reads).
// Every event type has a stable numeric id, a name and named fields. Each trace file carries the
// schema it was written with, so a reader can decode (and skip) event types it does not know.
// Never renumber or reorder fields of an existing type: add new types or new trailing fields.
#pragma once
#include <cstdint>

namespace sigmatrace::format {

enum class FieldKind : uint8_t {
  u64 = 1,    // unsigned, varint on disk
  i64 = 2,    // signed, zigzag varint on disk
  bytes = 3,  // length-prefixed byte string (names, addresses)
};

// X(id, enum_name, "wire_name", fields...) where each field is F(kind, "name").
// Field order is the order of the u64 words in the raw record.
#define SIGMATRACE_EVENT_TYPES(X, F)                                                              \
  /* Runtime (process stream, tid 0 unless said) */                                               \
  X(1, clock_sync, "clock_sync", F(u64, "realtime_ns") F(u64, "monotonic_ns"))                    \
  X(2, thread_info, "thread_info", F(u64, "tid") F(bytes, "name"))                                \
  X(3, thread_summary, "thread_summary",                                                          \
    F(u64, "tid") F(u64, "events_recorded") F(u64, "events_dropped") F(u64, "chunks_dropped")     \
    F(u64, "aggregate_overflow"))                                                                 \
  X(4, aggregate_entry, "aggregate_entry",                                                        \
    F(u64, "tid") F(u64, "key_kind") F(u64, "key_a") F(u64, "key_b") F(u64, "count")              \
    F(u64, "bytes"))                                                                              \
  X(5, file_end, "file_end", F(u64, "chunks_written") F(u64, "events_written")                    \
    F(u64, "events_dropped") F(u64, "exit_reason"))                                               \
  X(6, provider_status, "provider_status", F(bytes, "name") F(u64, "enabled") F(bytes, "detail")) \
  X(7, user_mark, "user_mark", F(u64, "id") F(u64, "value"))                                      \
  X(8, rank_update, "rank_update", F(i64, "rank") F(i64, "size") F(bytes, "source"))             \
  /* The file could not be written (disk full, I/O error): it was cut back to its last whole */   \
  /* chunk at file_bytes; chunks and events recorded afterwards were discarded and counted. */    \
  X(9, write_failure, "write_failure",                                                            \
    F(u64, "file_bytes") F(u64, "chunks_lost") F(u64, "events_lost") F(bytes, "error"))           \
  /* Periodic: events each thread had recorded by then (in the file or still buffered), so that */ \
  /* a process killed without a final flush still tells how much of what it recorded is missing. */ \
  X(10, thread_progress, "thread_progress", F(u64, "tid") F(u64, "events_recorded"))              \
  /* After the events a control call (open, alloc, reg_mr, create/modify/destroy, devx command) */ \
  /* recorded when it returned: it began `ticks` TSC ticks before this event. */                    \
  X(11, call_span, "call_span", F(u64, "ticks"))                                                    \
  /* sigmatrace profile --hang-dump: the process made no progress (no completion polled, no event */ \
  /* recorded) for idle_ns (reason 1), or was sent SIGUSR1 (reason 2); completions: polled by then; */ \
  /* gpu_kernels_running: marked GPU kernels not yet seen to end. */                                \
  /* (12 would share a field-delta slot with cuda_context_end, 524.) */                             \
  X(13, hang_dump, "hang_dump", F(u64, "reason") F(u64, "idle_ns") F(u64, "completions")          \
    F(u64, "gpu_kernels_running"))                                                                 \
  /* libibverbs (layer 'ibv'). Objects are identified by their address in the process ("handle"); */ \
  /* QPs also by qp_num, which with the port's LID/GID is the hardware identity across processes. */ \
  X(100, ibv_device_open, "ibv_device_open", F(u64, "context") F(u64, "node_guid") F(bytes, "name")) \
  X(101, ibv_port_info, "ibv_port_info",                                                          \
    F(u64, "context") F(u64, "port") F(u64, "lid") F(u64, "gid_subnet_prefix")                    \
    F(u64, "gid_interface_id") F(u64, "link_layer") F(u64, "active_mtu") F(u64, "state"))         \
  X(102, ibv_device_close, "ibv_device_close", F(u64, "context"))                                 \
  X(103, ibv_pd_alloc, "ibv_pd_alloc", F(u64, "context") F(u64, "pd"))                            \
  X(104, ibv_mr_reg, "ibv_mr_reg",                                                                \
    F(u64, "pd") F(u64, "mr") F(u64, "addr") F(u64, "length") F(u64, "access") F(u64, "lkey")     \
    F(u64, "rkey") F(u64, "memory_kind") F(i64, "gpu_ordinal"))                                   \
  X(105, ibv_mr_dereg, "ibv_mr_dereg", F(u64, "mr") F(u64, "lkey"))                               \
  X(106, ibv_cq_create, "ibv_cq_create", F(u64, "context") F(u64, "cq") F(u64, "cqe"))            \
  X(107, ibv_cq_destroy, "ibv_cq_destroy", F(u64, "cq"))                                          \
  X(108, ibv_qp_create, "ibv_qp_create",                                                          \
    F(u64, "context") F(u64, "pd") F(u64, "qp") F(u64, "qp_num") F(u64, "qp_type")                \
    F(u64, "send_cq") F(u64, "recv_cq") F(u64, "srq") F(u64, "max_send_wr") F(u64, "max_recv_wr") \
    F(u64, "max_inline_data"))                                                                    \
  X(109, ibv_qp_destroy, "ibv_qp_destroy", F(u64, "qp_num"))                                      \
  X(110, ibv_qp_modify, "ibv_qp_modify",                                                          \
    F(u64, "qp_num") F(u64, "attr_mask") F(u64, "state") F(u64, "port") F(u64, "dest_qp_num")     \
    F(u64, "remote_lid") F(u64, "remote_gid_subnet_prefix") F(u64, "remote_gid_interface_id")     \
    F(u64, "sq_psn") F(u64, "rq_psn") F(u64, "path_mtu"))                                         \
  /* Simple mode: one event per post call. opcode_mask has bit (1 << ibv_wr_opcode) per opcode. */ \
  X(111, ibv_post_send, "ibv_post_send",                                                          \
    F(u64, "qp_num") F(u64, "wr_count") F(u64, "bytes") F(u64, "opcode_mask") F(i64, "result"))   \
  X(112, ibv_post_recv, "ibv_post_recv",                                                          \
    F(u64, "qp_num") F(u64, "wr_count") F(u64, "bytes") F(i64, "result"))                         \
  X(113, ibv_post_srq_recv, "ibv_post_srq_recv",                                                  \
    F(u64, "srq") F(u64, "wr_count") F(u64, "bytes") F(i64, "result"))                            \
  /* Full mode: one event per work request and per completion. */                                \
  X(114, ibv_send_wr, "ibv_send_wr",                                                              \
    F(u64, "qp_num") F(u64, "wr_id") F(u64, "opcode") F(u64, "bytes") F(u64, "num_sge")           \
    F(u64, "remote_addr") F(u64, "rkey") F(u64, "send_flags") F(u64, "imm_data"))                 \
  X(115, ibv_recv_wr, "ibv_recv_wr",                                                              \
    F(u64, "qp_num") F(u64, "wr_id") F(u64, "bytes") F(u64, "num_sge") F(u64, "srq"))             \
  X(116, ibv_completion, "ibv_completion",                                                        \
    F(u64, "cq") F(u64, "qp_num") F(u64, "wr_id") F(u64, "status") F(u64, "opcode")               \
    F(u64, "byte_len") F(u64, "imm_data") F(u64, "wc_flags") F(u64, "src_qp") F(u64, "vendor_err")) \
  /* Errors, in every mode: a failed verbs call (call id from IbvCall, errno or return value). */  \
  X(117, ibv_call_error, "ibv_call_error", F(u64, "call") F(u64, "object") F(i64, "error"))       \
  X(118, ibv_async_event, "ibv_async_event",                                                      \
    F(u64, "context") F(u64, "event_type") F(u64, "element"))                                     \
  X(119, ibv_srq_create, "ibv_srq_create", F(u64, "pd") F(u64, "srq") F(u64, "max_wr"))           \
  X(120, ibv_poll_cq, "ibv_poll_cq", F(u64, "cq") F(u64, "polled") F(i64, "result"))             \
  /* mlx5 devx (layer 'devx'): the objects GPU-initiated stacks create without verbs, decoded */ \
  /* from the PRM command mailboxes. status/syndrome: the command's output header. */             \
  X(200, devx_uar_alloc, "devx_uar_alloc",                                                        \
    F(u64, "context") F(u64, "uar") F(u64, "page_id") F(u64, "base_addr") F(u64, "reg_addr")      \
    F(u64, "alloc_type") F(i64, "error"))                                                         \
  X(201, devx_uar_free, "devx_uar_free", F(u64, "uar") F(u64, "page_id"))                         \
  X(202, devx_umem_reg, "devx_umem_reg",                                                          \
    F(u64, "context") F(u64, "umem") F(u64, "umem_id") F(u64, "addr") F(u64, "size")              \
    F(u64, "access") F(u64, "memory_kind") F(i64, "gpu_ordinal") F(i64, "error"))                 \
  X(203, devx_umem_dereg, "devx_umem_dereg", F(u64, "umem") F(u64, "umem_id") F(i64, "result"))  \
  X(204, devx_cq_create, "devx_cq_create",                                                        \
    F(u64, "context") F(u64, "obj") F(u64, "cqn") F(u64, "log_cq_size") F(u64, "umem_id")         \
    F(u64, "umem_offset") F(u64, "dbr_umem_id") F(u64, "dbr_offset") F(u64, "uar_page")          \
    F(u64, "collapsed") F(u64, "status") F(u64, "syndrome"))                                      \
  /* sq_addr: where the send queue lies in the process (umem address + offset); memory_kind and */ \
  /* gpu_ordinal: that umem's memory, so each QP is attributed to its GPU exactly. */              \
  X(205, devx_qp_create, "devx_qp_create",                                                        \
    F(u64, "context") F(u64, "obj") F(u64, "qp_num") F(u64, "service_type") F(u64, "pd")          \
    F(u64, "log_sq_size") F(u64, "log_rq_size") F(u64, "sq_umem_id") F(u64, "sq_umem_offset")    \
    F(u64, "sq_addr") F(u64, "dbr_umem_id") F(u64, "dbr_offset") F(u64, "uar_page")              \
    F(u64, "send_cqn") F(u64, "recv_cqn") F(u64, "memory_kind") F(i64, "gpu_ordinal")             \
    F(u64, "status") F(u64, "syndrome"))                                                          \
  /* command: the PRM opcode (RST2INIT_QP 0x502, INIT2RTR_QP 0x503, ...); the address path as */   \
  /* the command set it (fields the command does not carry are 0). */                              \
  X(206, devx_qp_modify, "devx_qp_modify",                                                        \
    F(u64, "obj") F(u64, "qp_num") F(u64, "command") F(u64, "remote_qpn") F(u64, "remote_lid")    \
    F(u64, "remote_gid_hi") F(u64, "remote_gid_lo") F(u64, "send_psn") F(u64, "recv_psn")         \
    F(u64, "mtu") F(u64, "status") F(u64, "syndrome"))                                            \
  /* id: the CQN / QPN (0 for other objects); command: the create command of the object. */       \
  X(207, devx_obj_destroy, "devx_obj_destroy", F(u64, "obj") F(u64, "command") F(u64, "id") F(i64, "result")) \
  X(208, devx_obj_create, "devx_obj_create",                                                      \
    F(u64, "context") F(u64, "obj") F(u64, "command") F(u64, "status") F(u64, "syndrome"))        \
  /* UCX (layer 'ucx'): UCP objects by address; ops carry the UCT interface and endpoint (lane) */ \
  /* that carried them when the transport was used during the call (0: deferred to progress). */  \
  X(300, ucx_worker_create, "ucx_worker_create", F(u64, "context") F(u64, "worker") F(bytes, "address")) \
  X(301, ucx_ep_create, "ucx_ep_create",                                                          \
    F(u64, "worker") F(u64, "ep") F(u64, "peer_kind") F(i64, "status") F(bytes, "peer"))            \
  X(302, ucx_ep_close, "ucx_ep_close", F(u64, "ep"))                                              \
  X(303, ucx_mem_map, "ucx_mem_map",                                                              \
    F(u64, "memh") F(u64, "address") F(u64, "length") F(u64, "memory_type"))                       \
  X(304, ucx_mem_unmap, "ucx_mem_unmap", F(u64, "memh"))                                          \
  X(305, ucx_rkey_pack, "ucx_rkey_pack", F(u64, "memh") F(u64, "size"))                           \
  X(306, ucx_rkey_unpack, "ucx_rkey_unpack", F(u64, "ep") F(u64, "rkey"))                         \
  X(307, ucx_op, "ucx_op",                                                                        \
    F(u64, "op") F(u64, "object") F(u64, "bytes") F(u64, "tag") F(u64, "tag_mask")                 \
    F(u64, "remote_addr") F(u64, "request") F(i64, "status") F(u64, "iface") F(u64, "uct_ep"))     \
  /* length: what a receive got, or kUcxLengthUnknown when the test that saw it done gives none */ \
  X(308, ucx_request_done, "ucx_request_done",                                                    \
    F(u64, "request") F(i64, "status") F(u64, "tag") F(u64, "length"))                             \
  X(309, ucx_am_recv, "ucx_am_recv",                                                              \
    F(u64, "worker") F(u64, "id") F(u64, "header_length") F(u64, "length") F(u64, "reply_ep")      \
    F(u64, "recv_attr"))                                                                          \
  X(310, ucx_worker_progress, "ucx_worker_progress", F(u64, "worker") F(u64, "count"))            \
  X(311, ucx_iface_open, "ucx_iface_open", F(u64, "iface") F(u64, "worker") F(bytes, "transport")) \
  X(312, ucx_iface_close, "ucx_iface_close", F(u64, "iface"))                                     \
  X(313, ucx_uct_ep_create, "ucx_uct_ep_create", F(u64, "iface") F(u64, "uct_ep"))                \
  X(314, ucx_uct_op, "ucx_uct_op",                                                                \
    F(u64, "iface") F(u64, "uct_ep") F(u64, "op") F(u64, "bytes") F(i64, "status"))                \
  X(315, ucx_call_error, "ucx_call_error", F(u64, "call") F(u64, "object") F(i64, "status"))      \
  X(316, ucx_worker_destroy, "ucx_worker_destroy", F(u64, "worker"))                              \
  /* The program freed (or released) a request: it had completed by then. */                       \
  X(317, ucx_request_free, "ucx_request_free", F(u64, "request"))                                  \
  /* libfabric (layer 'ofi'): objects by fid address; peer = fi_addr_t (rdm) or 0 (connected). */  \
  X(400, ofi_getinfo, "ofi_getinfo", F(i64, "result") F(u64, "count") F(bytes, "provider"))       \
  X(401, ofi_fabric_open, "ofi_fabric_open", F(u64, "fabric") F(i64, "result") F(bytes, "provider")) \
  X(402, ofi_domain_open, "ofi_domain_open", F(u64, "fabric") F(u64, "domain") F(bytes, "name"))  \
  X(403, ofi_ep_open, "ofi_ep_open",                                                              \
    F(u64, "domain") F(u64, "ep") F(u64, "ep_type") F(u64, "caps") F(bytes, "provider"))           \
  X(404, ofi_object_open, "ofi_object_open",                                                      \
    F(u64, "kind") F(u64, "parent") F(u64, "object") F(u64, "attr"))                               \
  X(405, ofi_mr_reg, "ofi_mr_reg",                                                                \
    F(u64, "domain") F(u64, "mr") F(u64, "addr") F(u64, "length") F(u64, "access") F(u64, "key"))  \
  X(406, ofi_ep_address, "ofi_ep_address", F(u64, "ep") F(u64, "kind") F(bytes, "address"))       \
  X(407, ofi_av_insert, "ofi_av_insert",                                                          \
    F(u64, "av") F(u64, "index") F(u64, "fi_addr") F(bytes, "address"))                            \
  X(408, ofi_op, "ofi_op",                                                                        \
    F(u64, "op") F(u64, "ep") F(u64, "bytes") F(u64, "peer") F(u64, "tag") F(u64, "remote_addr")   \
    F(u64, "context") F(i64, "result") F(u64, "tag_ignore"))                                      \
  X(409, ofi_cq_read, "ofi_cq_read", F(u64, "cq") F(u64, "count"))                                \
  X(410, ofi_completion, "ofi_completion",                                                        \
    F(u64, "cq") F(u64, "context") F(u64, "flags") F(u64, "length") F(u64, "tag") F(u64, "source")) \
  X(411, ofi_completion_error, "ofi_completion_error",                                            \
    F(u64, "cq") F(u64, "context") F(u64, "flags") F(i64, "error") F(i64, "prov_errno"))           \
  X(412, ofi_call_error, "ofi_call_error", F(u64, "call") F(u64, "object") F(i64, "error"))       \
  X(413, ofi_eq_event, "ofi_eq_event", F(u64, "eq") F(u64, "event") F(u64, "fid")) \
  /* CUDA driver and the GPU doorbell hijack (layer 'gpu'). via: CudaLookupVia; wrapped: the */    \
  /* caller got the profiler's wrapper (else the driver's own pointer). Instrumented names only. */ \
  X(500, cuda_lookup, "cuda_lookup",                                                              \
    F(u64, "via") F(u64, "version") F(u64, "flags") F(u64, "wrapped") F(bytes, "symbol"))         \
  X(501, cuda_export_table, "cuda_export_table", F(u64, "uuid_hi") F(u64, "uuid_lo") F(i64, "result")) \
  /* cuMemHostRegister of a range inside a devx UAR page (other ranges are never recorded). */     \
  X(502, gpu_uar_register, "gpu_uar_register",                                                    \
    F(u64, "address") F(u64, "size") F(u64, "flags") F(u64, "cu_context") F(u64, "uar_page")      \
    F(u64, "refcount") F(i64, "result"))                                                          \
  /* cuMemHostGetDevicePointer of a UAR range: what the GPU was given (outcome: UarMapOutcome). */ \
  X(503, gpu_uar_map, "gpu_uar_map",                                                              \
    F(u64, "address") F(u64, "cu_context") F(u64, "uar_page") F(u64, "device_pointer")            \
    F(u64, "real_device_pointer") F(u64, "shadow") F(u64, "outcome") F(i64, "result"))            \
  X(504, gpu_uar_unregister, "gpu_uar_unregister",                                                \
    F(u64, "address") F(u64, "cu_context") F(u64, "uar_page") F(u64, "refcount") F(i64, "result")) \
  /* One change of a hijacked doorbell register seen by a poller, stamped when it was seen. */     \
  /* delta: WQEBBs since this QP's previous doorbell (covers doorbells the GPU coalesced); */       \
  /* kind: DoorbellKind. Recorded by the poller thread; with WQE recovery once its WQEs are */    \
  /* read (wqe_class: DoorbellWqeClass, wqes: how many were recovered), followed by its gpu_wqe. */ \
  X(505, gpu_doorbell, "gpu_doorbell",                                                            \
    F(u64, "uar_page") F(u64, "qp_num") F(u64, "producer_index") F(u64, "delta") F(u64, "kind")   \
    F(u64, "wqe_class") F(u64, "wqes"))                                                           \
  /* A poller thread started (event 1) or stopped (2, with its totals: pages it served, their */   \
  /* doorbells, its CPU and wall time). wait: PollerWait. */                                        \
  X(506, gpu_poller, "gpu_poller",                                                                \
    F(u64, "event") F(u64, "pages") F(u64, "doorbells") F(u64, "cpu_ns") F(u64, "wall_ns")        \
    F(u64, "wait") F(i64, "cpu") F(u64, "untracked_qps"))                                         \
  /* A kernel launch (entry: CudaLaunchEntry; function: the CUfunction, or the CUgraphExec; */    \
  /* end_marked: 1 if its end on the GPU will be reported by a cuda_kernel_end). */    \
  X(507, cuda_launch, "cuda_launch",                                                              \
    F(u64, "function") F(u64, "stream") F(i64, "device") F(u64, "entry") F(u64, "grid_x")         \
    F(u64, "grid_y") F(u64, "grid_z") F(u64, "block_x") F(u64, "block_y") F(u64, "block_z")       \
    F(u64, "shared_bytes") F(i64, "result") F(u64, "end_marked"))                                 \
  X(508, cuda_function, "cuda_function", F(u64, "function") F(bytes, "name"))                    \
  /* One WQE recovered from a GPU-initiated send queue, stamped with the time of the doorbell */  \
  /* that announced it (doorbell_pi: that doorbell's producer index). The control segment's */    \
  /* fields as stored (opcode, opmod, ds, flags = fm_ce_se), payload bytes (inline or the sum */   \
  /* of the data segments), the first data segment, the atomic operands; a DC initiator's WQE */   \
  /* names its target (dct, its port's rlid; 0 on RC); atomic_bytes: the operand's width. */       \
  X(509, gpu_wqe, "gpu_wqe",                                                                      \
    F(u64, "qp_num") F(u64, "wqe_index") F(u64, "doorbell_pi") F(u64, "opcode") F(u64, "opmod")   \
    F(u64, "ds") F(u64, "flags") F(u64, "bytes") F(u64, "remote_addr") F(u64, "rkey")             \
    F(u64, "local_addr") F(u64, "lkey") F(u64, "sges") F(u64, "inline") F(u64, "imm")             \
    F(u64, "swap_add") F(u64, "compare") F(u64, "swap_mask") F(u64, "compare_mask")               \
    F(u64, "dct") F(u64, "rlid") F(u64, "atomic_bytes"))                                          \
  /* What WQE recovery did for one QP, when it ends (QP destroyed, page unmapped, exit); every */  \
  /* mode. recovered: WQEs parsed; lost_wqebbs: slots the GPU had overwritten before they were */  \
  /* read; damaged: WQEs that did not parse; unread_wqebbs: announced but not readable (send */    \
  /* queue unknown, copy failed); index_errors: producer indices that went backwards. */          \
  X(510, gpu_wqe_stats, "gpu_wqe_stats",                                                          \
    F(u64, "qp_num") F(u64, "uar_page") F(i64, "gpu") F(u64, "memory") F(u64, "recovered")        \
    F(u64, "wqebbs") F(u64, "lost_wqebbs") F(u64, "damaged") F(u64, "unread_wqebbs")              \
    F(u64, "index_errors") F(u64, "copies") F(u64, "batches") F(u64, "wait_ns") F(u64, "max_wait_ns") \
    F(u64, "batch"))                                                                              \
  /* When a kernel launched on an explicit stream finished on its GPU (a timed CUDA event the */  \
  /* profiler recorded on that stream after the launch, while GPU doorbells are hijacked, with */  \
  /* SIGMATRACE_KERNEL_MARKERS=timed; recorded by default before 2026-12-06): at ref_tsc + */       \
  /* end_offset_ns, ref_tsc being a host time the GPU's event clock was matched to. launch_tsc */  \
  /* is the cuda_launch event's timestamp. */                                                      \
  X(511, cuda_kernel_end, "cuda_kernel_end",                                                      \
    F(u64, "function") F(u64, "stream") F(i64, "device") F(u64, "launch_tsc") F(u64, "ref_tsc")  \
    F(i64, "end_offset_ns"))                                                                      \
  /* When a kernel launched on an explicit stream was seen finished (SIGMATRACE_KERNEL_MARKERS=on: */ \
  /* an event without timing the profiler recorded on that stream after the launch, asked about */ \
  /* by a doorbell poller): it ended after running_tsc, the last host time it was seen running */  \
  /* (launch_tsc if never), and before this event's own time. launch_tsc is the cuda_launch */     \
  /* event's timestamp. (cuda_kernel_end is the same with the GPU's own time: timed markers.) */   \
  X(526, cuda_kernel_seen_end, "cuda_kernel_seen_end",                                            \
    F(u64, "function") F(u64, "stream") F(i64, "device") F(u64, "launch_tsc") F(u64, "running_tsc")) \
  /* At exit, when any launch was marked: markers recorded, ends reported, markers dropped (table */ \
  /* full, an event failed, the context went away) and still unresolved (kernel running). */       \
  X(512, cuda_kernel_markers, "cuda_kernel_markers",                                              \
    F(u64, "marked") F(u64, "resolved") F(u64, "dropped") F(u64, "unresolved"))                  \
  /* A CUDA context the application ended (how: CudaContextEnd): what the profiler held in it was */ \
  /* let go first — pollers whose copy streams in it were closed, kernel markers dropped, send */   \
  /* queues in its memory no longer read — then the real call ran with result. (513-523 would */  \
  /* share a field-delta slot with ids 1-11.) */                                                    \
  X(524, cuda_context_end, "cuda_context_end",                                                    \
    F(u64, "context") F(u64, "how") F(u64, "pollers") F(u64, "markers_dropped") F(u64, "queues") \
    F(i64, "result"))                                                                             \
  /* NVTX, as its injection library (thread stream of the calling thread). Domains, registered */ \
  /* strings and payload schemas are named by their handle or id; domain 0 is NVTX's default. */  \
  X(600, nvtx_domain, "nvtx_domain", F(u64, "domain") F(bytes, "name"))                          \
  X(601, nvtx_string, "nvtx_string", F(u64, "domain") F(u64, "handle") F(bytes, "text"))         \
  X(602, nvtx_category, "nvtx_category", F(u64, "domain") F(u64, "category") F(bytes, "name"))   \
  X(603, nvtx_thread_name, "nvtx_thread_name", F(u64, "os_tid") F(bytes, "name"))                \
  /* A range pushed or started, or a mark (kind: NvtxKind). range_id: a start/end range's id */   \
  /* (0 for push and mark); message: the text (message_handle 0), or a registered string's */     \
  /* handle. A payload of the extended kind follows as nvtx_payload events, on the same thread. */ \
  X(604, nvtx_begin, "nvtx_begin",                                                                \
    F(u64, "domain") F(u64, "kind") F(u64, "range_id") F(u64, "category") F(u64, "color")         \
    F(u64, "payload_type") F(u64, "payload") F(u64, "message_handle") F(bytes, "message"))       \
  /* A range popped (kind push; range_id 0) or ended (kind start, its id, maybe another thread). */ \
  X(605, nvtx_end, "nvtx_end", F(u64, "domain") F(u64, "kind") F(u64, "range_id"))                \
  /* A payload schema or enum registered (kind: 1 schema, 2 enum). layout, one line per entry: */ \
  /* schema "name\ttype\tflags\toffset\tarray_detail", enum "name\tvalue". */                     \
  X(606, nvtx_schema, "nvtx_schema",                                                              \
    F(u64, "domain") F(u64, "schema_id") F(u64, "kind") F(u64, "size") F(bytes, "layout"))        \
  /* The bytes of one extended payload (at most kNvtxPayloadBytes; size: its real size). */        \
  X(607, nvtx_payload, "nvtx_payload", F(u64, "schema_id") F(u64, "size") F(bytes, "data")) \
  /* NCCL (layer 'nccl'), as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN names libsigmatrace.so; */ \
  /* `sigmatrace profile` sets it). A communicator NCCL initialised the plugin for: context */      \
  /* names it in nccl_task; comm_hash is NCCL's id of the communicator, the same on every rank. */   \
  X(700, nccl_comm, "nccl_comm",                                                                  \
    F(u64, "context") F(u64, "comm_hash") F(i64, "rank") F(i64, "nranks") F(i64, "nnodes")        \
    F(bytes, "name"))                                                                             \
  /* A collective or point-to-point task NCCL launched, on the calling thread (inside the call, */ \
  /* or its group's end). task: its number in the process; kind: NcclTaskKind; seq: NCCL's */      \
  /* sequence number of the function on the communicator (collectives: ncclAllReduce #seq), the */ \
  /* plugin's count of the communicator's sends or receives (p2p); peer: the root (collectives) */ \
  /* or the peer (p2p); names: "func\tdatatype\talgorithm\tprotocol". */                           \
  X(701, nccl_task, "nccl_task",                                                                  \
    F(u64, "context") F(u64, "task") F(u64, "kind") F(u64, "seq") F(u64, "count") F(i64, "peer")  \
    F(u64, "channels") F(u64, "warps") F(bytes, "names"))                                         \
  /* A work request NCCL's IB transport posts next for a proxy step of task, recorded on the */    \
  /* posting thread just before its ibv_post_send or ibv_post_recv: the QP and the wr_id the */    \
  /* work request carries tie it to the verbs operation. task 0: its step was not known. */        \
  X(702, nccl_net_wr, "nccl_net_wr",                                                              \
    F(u64, "task") F(u64, "channel") F(i64, "peer") F(u64, "is_send") F(u64, "step")             \
    F(u64, "qp_num") F(u64, "wr_id"))

enum class EventType : uint16_t {
#define SIGMATRACE_ENUM_FIELD(kind, name)
#define SIGMATRACE_ENUM_ENTRY(id, ident, name, fields) ident = id,
  SIGMATRACE_EVENT_TYPES(SIGMATRACE_ENUM_ENTRY, SIGMATRACE_ENUM_FIELD)
#undef SIGMATRACE_ENUM_ENTRY
#undef SIGMATRACE_ENUM_FIELD
};

// The shape of each event type at compile time: how many integer fields it has, and how many
// bytes fields (at most one, the last). The recorder's typed calls check their arguments against
// these, so a wrong field count is a compile error instead of a "malformed" count at run time.
template <EventType T>
inline constexpr uint32_t kEventWordFields = 0;
template <EventType T>
inline constexpr uint32_t kEventBytesFields = 0;
#define SIGMATRACE_WORD_FIELD(kind, name) +(FieldKind::kind == FieldKind::bytes ? 0u : 1u)
#define SIGMATRACE_BYTES_FIELD(kind, name) +(FieldKind::kind == FieldKind::bytes ? 1u : 0u)
#define SIGMATRACE_WORD_SHAPE(id, ident, name, fields) \
  template <>                                         \
  inline constexpr uint32_t kEventWordFields<EventType::ident> = 0u fields;
#define SIGMATRACE_BYTES_SHAPE(id, ident, name, fields) \
  template <>                                          \
  inline constexpr uint32_t kEventBytesFields<EventType::ident> = 0u fields;
SIGMATRACE_EVENT_TYPES(SIGMATRACE_WORD_SHAPE, SIGMATRACE_WORD_FIELD)
SIGMATRACE_EVENT_TYPES(SIGMATRACE_BYTES_SHAPE, SIGMATRACE_BYTES_FIELD)
// The most fields one event type may have (decoders size their buffers by it).
inline constexpr uint32_t kMaxEventFields = 24;
// ucx_request_done's length when the call that saw the request done (ucp_request_check_status,
// a failed request) says nothing of it.
inline constexpr uint64_t kUcxLengthUnknown = ~uint64_t{0};
// The QP types DC objects are recorded with (ibv_qp_type has none: mlx5 makes them IBV_QPT_DRIVER).
inline constexpr uint64_t kQpTypeDcInitiator = 0x100;
inline constexpr uint64_t kQpTypeDcTarget = 0x101;
#define SIGMATRACE_FIELD_LIMIT(id, ident, name, fields)                                      \
  static_assert(kEventWordFields<EventType::ident> + kEventBytesFields<EventType::ident> <= \
                    kMaxEventFields,                                                         \
                "too many fields: " name);
SIGMATRACE_EVENT_TYPES(SIGMATRACE_FIELD_LIMIT, SIGMATRACE_WORD_FIELD)
#undef SIGMATRACE_FIELD_LIMIT
#undef SIGMATRACE_WORD_SHAPE
#undef SIGMATRACE_BYTES_SHAPE
#undef SIGMATRACE_WORD_FIELD
#undef SIGMATRACE_BYTES_FIELD

// The largest bytes field the format carries (a longer one would be rejected by the writer).
inline constexpr uint32_t kMaxBytesField = 0xffff;

// Why a process's trace ended (file_end.exit_reason).
enum class ExitReason : uint64_t { normal_exit = 0, signal = 1, crash = 2, exec = 3 };

// Aggregate-mode key kinds (aggregate_entry.key_kind) and what key_a / key_b hold.
enum class AggregateKey : uint64_t {
  user_mark = 1,       // a: mark id, b: 0; bytes: sum of values
  ibv_qp_opcode = 2,   // a: qp_num, b: ibv_wr_opcode (sends) or 0x100 + ibv_wc_opcode (receives completed)
  ibv_endpoint_pair = 3,  // a: local (lid << 32 | qp_num), b: remote (lid << 32 | qp_num), sends only
  ucx_ep_op = 4,          // a: ucp_ep_h (or ucp_worker_h for worker-level ops), b: UcxOp
  ucx_uct_op = 5,         // a: uct_iface_h, b: UctOp
  ofi_ep_op = 6,          // a: fid_ep address, b: OfiOp
  gpu_doorbell_qp = 7,    // a: qp_num, b: UAR page id; count: doorbells, bytes: WQEBBs announced (sum of deltas)
  cuda_launch = 8,        // a: CUfunction (or CUgraphExec), b: device ordinal + 1 (0: unknown); bytes: 0
  gpu_wqe_qp_opcode = 9,  // a: qp_num, b: mlx5 WQE opcode; count: WQEs recovered, bytes: their payload
};

// cuda_lookup.via: how the caller asked the driver for a function.
enum class CudaLookupVia : uint64_t { dlsym = 1, get_proc_address = 2, get_proc_address_v2 = 3 };
// destroy: cuCtxDestroy; reset: cuDevicePrimaryCtxReset (cudaDeviceReset); release: the last
// cuDevicePrimaryCtxRelease of a primary context (seen after the fact).
enum class CudaContextEnd : uint64_t { destroy = 1, reset = 2, release = 3 };

// nccl_task.kind
enum class NcclTaskKind : uint64_t { collective = 1, send = 2, recv = 3 };

// nvtx_begin.kind / nvtx_end.kind
enum class NvtxKind : uint64_t { push = 1, start = 2, mark = 3 };
// The most of one NVTX message, and of one extended payload, a trace keeps (longer: cut).
inline constexpr uint32_t kNvtxMessageBytes = 1024;
inline constexpr uint32_t kNvtxPayloadBytes = 512;

// gpu_uar_map.outcome
enum class UarMapOutcome : uint64_t {
  hijacked = 1,        // the GPU got the shadow page; a poller forwards its doorbells
  doorbells_off = 2,   // SIGMATRACE_DOORBELLS=off: the real pointer, doorbells not traced
  failed = 3,          // the real call failed: its result returned unchanged
  hijack_failed = 4,   // shadow page or poller could not be set up: the real pointer, logged once
};

// gpu_doorbell.kind
// from_record: a doorbell of a QP sharing its register with others, overwritten by another QP's
// store before the poller saw it, and forwarded from the QP's doorbell record instead.
enum class DoorbellKind : uint64_t { doorbell = 1, blueflame = 2, from_record = 3 };

// gpu_doorbell.wqe_class: what the doorbell's WQEs were (the paper's Fig. 8b tells them apart).
// data: at least one WRITE, READ or SEND of more than 8 bytes; control: only atomics, NOPs and
// puts or sends of at most 8 bytes (signals, barrier flags).
enum class DoorbellWqeClass : uint64_t { not_read = 0, data = 1, control = 2 };
constexpr uint64_t kControlPutMaxBytes = 8;

// gpu_wqe_stats.memory: where the send queue is, so how its WQEs were read.
enum class SqMemory : uint64_t { unknown = 0, host = 1, gpu = 2 };

// gpu_poller.wait: how an idle poller waits.
enum class PollerWait : uint64_t { pause = 1, umwait = 2, mwaitx = 3 };

// cuda_launch.entry
enum class CudaLaunchEntry : uint64_t {
  launch_kernel = 1, launch_kernel_ex, launch_cooperative_kernel, graph_launch,
  // The CUDA runtime's (shared libcudart): <<<>>> (CUDA 13: __cudaLaunchKernel with a
  // cudaKernel_t), cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel.
  runtime_launch_kernel = 5, runtime_launch_kernel_ex, runtime_launch_cooperative_kernel,
};

// ucx_op.op / ucx_call_error.call (calls >= 32 are control calls).
enum class UcxOp : uint64_t {
  put = 1, get, atomic_post, atomic_fetch, tag_send, tag_send_sync, tag_recv, tag_msg_recv, stream_send, stream_recv,
  am_send, am_recv_data, ep_flush, worker_flush, worker_fence, ep_close, tag_probe,
  worker_create = 32, ep_create, mem_map, rkey_pack, rkey_unpack, request, iface_open, uct_ep_create, mem_unmap, uct_op,
};

// ucx_uct_op.op: the UCT ops-table entry that was called.
enum class UctOp : uint64_t {
  put_short = 1, put_bcopy, put_zcopy, get_short, get_bcopy, get_zcopy, am_short, am_short_iov, am_bcopy, am_zcopy,
  atomic_cswap64, atomic_cswap32, atomic32_post, atomic64_post, atomic32_fetch, atomic64_fetch, tag_eager_short,
  tag_eager_bcopy, tag_eager_zcopy, tag_rndv_zcopy, ep_flush,
};

// ofi_op.op / ofi_call_error.call (calls >= 64 are control calls).
enum class OfiOp : uint64_t {
  send = 1, sendv, sendmsg, inject, senddata, injectdata, recv, recvv, recvmsg,
  tsend, tsendv, tsendmsg, tinject, tsenddata, tinjectdata, trecv, trecvv, trecvmsg,
  read, readv, readmsg, write, writev, writemsg, inject_write, writedata, inject_writedata,
  atomic, atomicv, atomicmsg, inject_atomic, fetch_atomic, fetch_atomicv, fetch_atomicmsg, compare_atomic,
  compare_atomicv, compare_atomicmsg,
  getinfo = 64, fabric, domain, endpoint, cq_open, cntr_open, eq_open, av_open, mr_reg, av_insert, connect, accept,
  listen, cq_read, cntr_read, eq_read, passive_ep, getname,
};

// ofi_object_open.kind
enum class OfiObject : uint64_t { cq = 1, cntr, eq, av, passive_ep, scalable_ep };

// ofi_ep_address.kind
enum class OfiAddressKind : uint64_t { local = 1, peer_connect = 2, peer = 3 };

// ucx_ep_create.peer_kind
enum class UcxPeerKind : uint64_t { worker_address = 1, sockaddr = 2, conn_request = 3, unknown = 0 };

// ibv_mr_reg.memory_kind
enum class MemoryKind : uint64_t { host = 0, gpu = 1, unknown = 2 };

// ibv_call_error.call: which verbs call failed.
enum class IbvCall : uint64_t {
  open_device = 1, alloc_pd, reg_mr, create_cq, create_qp, modify_qp, destroy_qp, post_send, post_recv,
  post_srq_recv, poll_cq, create_srq, dereg_mr, destroy_cq, query_port, req_notify_cq, get_cq_event,
  // Appended for the ibverbs provider (never renumber the ones above).
  close_device, dealloc_pd, destroy_srq, get_async_event,
  reg_dmabuf_mr,  // NCCL probes DMA-BUF support with fd -1: an expected EOPNOTSUPP without it
};

struct FieldSpec {
  FieldKind kind;
  const char* name;
};

struct EventSpec {
  uint16_t id;
  const char* name;
  uint8_t field_count;
  const FieldSpec* fields;
  // Derived from the fields, for the writer's encoder: a type with a bytes field has each record
  // checked field by field, and its fields are stored as they are (no deltas).
  bool has_bytes;
};

// All built-in event types, ordered by id.
const EventSpec* builtin_event_specs(int* count);
const EventSpec* find_builtin_spec(uint16_t id);

}  // namespace sigmatrace::format
