// The hot path: what a provider calls on an application thread to record one event or count one
// aggregate update. Runs on application threads: no locks, no system calls, no allocation, no
// exceptions. The common case is a bounds check, one RDTSC and a few stores; everything else
// (first event of a thread, full chunk, dropping) is in the out-of-line slow path.
#pragma once
#include <cstdint>
#include <cstring>

#include "format/event_types.h"
#include "format/raw_event.h"
#include "profiler/runtime/aggregate_table.h"
#include "profiler/runtime/tsc.h"

namespace sigmatrace::profiler {

struct ThreadState {
  uint8_t* cur;           // next write position in the thread's current chunk
  uint8_t* end;           // end of that chunk (cur == end == nullptr: no chunk yet, or dropping)
  uint32_t chunk;         // pool index of the current chunk, kNoChunk when none
  uint32_t slot;          // thread slot + 1; 0 while not attached
  uint8_t status;         // ThreadStatus
  AggregateTable* aggregate;
};

enum ThreadStatus : uint8_t { thread_unattached = 0, thread_recording = 1, thread_untracked = 2, thread_finished = 3 };

// constinit: without it every use in another file first tests (and might call) the variable's
// TLS init function, a load and a branch on each recorded event (550 places in the library).
extern thread_local constinit ThreadState t_state __attribute__((tls_model("initial-exec")));

// Slow path: returns room for `bytes` in a (new) chunk, or nullptr when the event must be dropped
// (then it has been counted).
uint8_t* reserve_slow(uint32_t bytes);
AggregateTable* attach_aggregate_slow();

namespace detail {
// Room for `bytes` in the thread's chunk, from the slow path when the chunk is full; nullptr when
// the event is dropped (already counted).
[[gnu::always_inline]] inline uint8_t* reserve(ThreadState& t, uint32_t bytes) {
  uint8_t* p = t.cur;
  if (__builtin_expect(reinterpret_cast<uintptr_t>(p) + bytes > reinterpret_cast<uintptr_t>(t.end), 0)) p = reserve_slow(bytes);
  return p;
}
template <format::EventType T, typename... Words>
[[gnu::always_inline]] inline void store_event(ThreadState& t, uint8_t* p, uint64_t tsc, Words... words) {
  static_assert(format::kEventBytesFields<T> == 0, "this event type has a bytes field: use record_with_bytes");
  static_assert(sizeof...(Words) == format::kEventWordFields<T>, "wrong number of fields for this event type");
  constexpr uint32_t n = sizeof...(Words);
  // Straight 8-byte stores into the chunk (records are 8-byte aligned): a stack copy read back
  // with wider loads would defeat store forwarding.
  auto* q = reinterpret_cast<uint64_t*>(p);
  q[0] = tsc;
  q[1] = static_cast<uint64_t>(T) | (uint64_t{n} << 16);
  uint32_t i = 2;
  ((q[i++] = static_cast<uint64_t>(words)), ...);
  // Release so that a final flush from another thread sees whole records (a plain store on x86).
  __atomic_store_n(&t.cur, p + format::raw_event_bytes(n), __ATOMIC_RELEASE);
}
}  // namespace detail

// Records an event of type T whose fields are all integer words, stamped `tsc` (several events of
// one call can share one RDTSC). The number of words is checked against the schema at compile time.
template <format::EventType T, typename... Words>
[[gnu::always_inline]] inline void record_at(uint64_t tsc, Words... words) {
  ThreadState& t = t_state;
  if (uint8_t* p = detail::reserve(t, format::raw_event_bytes(sizeof...(Words)))) detail::store_event<T>(t, p, tsc, words...);
}

// Records an event of type T whose fields are all integer words, stamped now. The clock is read
// once there is room: an event that is dropped costs no RDTSC, so dropping stays cheaper than
// recording.
template <format::EventType T, typename... Words>
[[gnu::always_inline]] inline void record(Words... words) {
  ThreadState& t = t_state;
  if (uint8_t* p = detail::reserve(t, format::raw_event_bytes(sizeof...(Words)))) detail::store_event<T>(t, p, read_tsc(), words...);
}

namespace detail {
template <format::EventType T, typename... Words>
[[gnu::noinline, gnu::cold]] uint64_t* record_before_call_slow(uint64_t tsc, Words... words) {
  uint8_t* p = reserve_slow(format::raw_event_bytes(sizeof...(Words) + 1));
  if (!p) return nullptr;
  store_event<T>(t_state, p, tsc, words..., uint64_t{0});
  return reinterpret_cast<uint64_t*>(p);
}
}  // namespace detail

// Records an event of type T before the call it describes: the words given, then 0 for its last
// field, the call's result. A wrapper that records this way keeps only the event's address across
// the call and, for the rare call that fails, sets the result afterwards through
// still_buffered(). Out of line, and calling nothing but (as a tail call) the slow path, it saves
// no register, so the wrapper's own registers stay free for the real call. Returns the event (its
// words start at [2]), or nullptr when it was dropped.
template <format::EventType T, typename... Words>
[[gnu::noinline]] uint64_t* record_before_call(uint64_t tsc, Words... words) {
  ThreadState& t = t_state;
  uint8_t* p = t.cur;
  if (__builtin_expect(reinterpret_cast<uintptr_t>(p) + format::raw_event_bytes(sizeof...(Words) + 1) > reinterpret_cast<uintptr_t>(t.end), 0))
    return detail::record_before_call_slow<T>(tsc, words...);
  detail::store_event<T>(t, p, tsc, words..., uint64_t{0});
  return reinterpret_cast<uint64_t*>(p);
}

// An event of type T and `words` fields recorded by record_before_call(), if the thread still
// holds it in its current chunk, so it can be amended; nullptr once that chunk went to the writer
// (the call itself recorded a chunk's worth). Off the hot path: for calls that failed.
uint64_t* still_buffered(uint64_t* event, format::EventType type, uint32_t words);

// Records an event whose last field is a byte string (rare events: names, addresses). A string
// longer than the format carries (format::kMaxBytesField) is not recorded and counted as dropped.
void record_bytes_event(format::EventType type, const uint64_t* words, uint32_t nwords, const void* data, size_t len);
template <format::EventType T, size_t N>
inline void record_with_bytes(const uint64_t (&words)[N], const void* data, size_t len) {
  static_assert(format::kEventBytesFields<T> == 1, "this event type has no bytes field: use record");
  static_assert(N == format::kEventWordFields<T>, "wrong number of integer fields for this event type");
  record_bytes_event(T, words, static_cast<uint32_t>(N), data, len);
}

// Aggregate mode: counts one operation of `bytes` under key (kind, a, b). No timestamp.
[[gnu::always_inline]] inline void aggregate_add(format::AggregateKey kind, uint64_t a, uint64_t b, uint64_t bytes) {
  AggregateTable* tab = t_state.aggregate;
  if (__builtin_expect(tab == nullptr, 0)) {
    tab = attach_aggregate_slow();
    if (!tab) return;
  }
  tab->add(static_cast<uint64_t>(kind), a, b, bytes);
}

}  // namespace sigmatrace::profiler
