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
  X(120, ibv_poll_cq, "ibv_poll_cq", F(u64, "cq") F(u64, "polled") F(i64, "result"))

enum class EventType : uint16_t {
#define SIGMATRACE_ENUM_FIELD(kind, name)
#define SIGMATRACE_ENUM_ENTRY(id, ident, name, fields) ident = id,
  SIGMATRACE_EVENT_TYPES(SIGMATRACE_ENUM_ENTRY, SIGMATRACE_ENUM_FIELD)
#undef SIGMATRACE_ENUM_ENTRY
#undef SIGMATRACE_ENUM_FIELD
};

// Why a process's trace ended (file_end.exit_reason).
enum class ExitReason : uint64_t { normal_exit = 0, signal = 1, crash = 2, exec = 3 };

// Aggregate-mode key kinds (aggregate_entry.key_kind) and what key_a / key_b hold.
enum class AggregateKey : uint64_t {
  user_mark = 1,       // a: mark id, b: 0; bytes: sum of values
  ibv_qp_opcode = 2,   // a: qp_num, b: ibv_wr_opcode (sends) or 0x100 + ibv_wc_opcode (receives completed)
  ibv_endpoint_pair = 3,  // a: local (lid << 32 | qp_num), b: remote (lid << 32 | qp_num), sends only
};

// ibv_mr_reg.memory_kind
enum class MemoryKind : uint64_t { host = 0, gpu = 1, unknown = 2 };

// ibv_call_error.call: which verbs call failed.
enum class IbvCall : uint64_t {
  open_device = 1, alloc_pd, reg_mr, create_cq, create_qp, modify_qp, destroy_qp, post_send, post_recv,
  post_srq_recv, poll_cq, create_srq, dereg_mr, destroy_cq, query_port, req_notify_cq, get_cq_event,
  // Appended for the ibverbs provider (never renumber the ones above).
  close_device, dealloc_pd, destroy_srq, get_async_event,
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
};

// All built-in event types, ordered by id.
const EventSpec* builtin_event_specs(int* count);
const EventSpec* find_builtin_spec(uint16_t id);

}  // namespace sigmatrace::format
