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
  X(8, rank_update, "rank_update", F(i64, "rank") F(i64, "size") F(bytes, "source"))

enum class EventType : uint16_t {
#define SIGMATRACE_ENUM_FIELD(kind, name)
#define SIGMATRACE_ENUM_ENTRY(id, ident, name, fields) ident = id,
  SIGMATRACE_EVENT_TYPES(SIGMATRACE_ENUM_ENTRY, SIGMATRACE_ENUM_FIELD)
#undef SIGMATRACE_ENUM_ENTRY
#undef SIGMATRACE_ENUM_FIELD
};

// Why a process's trace ended (file_end.exit_reason).
enum class ExitReason : uint64_t { normal_exit = 0, signal = 1, crash = 2, exec = 3 };

// Aggregate-mode key kinds (aggregate_entry.key_kind). Providers add theirs here.
enum class AggregateKey : uint64_t { user_mark = 1 };

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
