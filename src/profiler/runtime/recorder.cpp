// The recorder's slow path: attaching a thread to a slot, swapping a full chunk for a free one,
// and counting what has to be dropped. Still on application threads, so still no locks and no
// allocation except once per thread (its aggregate table in aggregate mode).
#include "profiler/runtime/recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "profiler/runtime/runtime.h"

namespace sigmatrace::profiler {

constinit thread_local ThreadState t_state __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr, kNoChunk, 0, 0, nullptr};

namespace {

// Only the slot's own thread adds to its drop count (the writer only reads it), so a plain load
// and store do: a locked add would make every dropped event dearer than a recorded one.
void count_dropped(ThreadSlot* s) {
  s->dropped_events.store(s->dropped_events.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

ThreadSlot* attach_thread(Runtime* rt) {
  ThreadState& t = t_state;
  if (t.status != thread_unattached) return t.slot ? &rt->slots[t.slot - 1] : nullptr;
  uint32_t idx;
  if (!rt->free_slots.pop(rt->slots, &idx)) {
    idx = rt->slots_used.fetch_add(1, std::memory_order_relaxed);
    if (idx >= rt->max_slots) {
      t.status = thread_untracked;
      return nullptr;
    }
  }
  ThreadSlot& s = rt->slots[idx];
  s.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  pthread_getname_np(pthread_self(), s.name, sizeof s.name);
  s.state = &t;
  s.dropped_events.store(0, std::memory_order_relaxed);
  s.aggregate = nullptr;
  t.slot = idx + 1;
  t.status = thread_recording;
  s.active.store(1, std::memory_order_release);
  s.generation.fetch_add(1, std::memory_order_release);  // last: the writer reads the rest after it
  pthread_setspecific(rt->thread_exit_key, &s);  // runs on_thread_exit() when the thread ends
  return &s;
}

void hand_over_current_chunk(Runtime* rt, ThreadState& t, ThreadSlot& s) {
  if (t.chunk == kNoChunk) return;
  uint8_t* base = rt->pool.data(t.chunk);
  ChunkMeta& m = rt->pool.meta(t.chunk);
  m.tid = s.tid;
  m.slot = t.slot - 1;
  m.used_bytes = static_cast<uint32_t>(t.cur - base);
  rt->pool.push_full(t.chunk);
  t.chunk = kNoChunk;
  t.cur = t.end = nullptr;
}

}  // namespace

uint8_t* reserve_slow(uint32_t bytes) {
  Runtime* rt = g_runtime;
  if (!rt || !rt->recording()) return nullptr;
  ThreadState& t = t_state;
  // An event after the thread's exit handler (another TLS destructor): its slot may already
  // belong to a new thread.
  if (t.status == thread_finished) {
    rt->untracked_events_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  ThreadSlot* s = attach_thread(rt);
  if (!s) {
    if (t.status == thread_untracked) rt->untracked_events_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (t.status != thread_recording || bytes > rt->pool.chunk_bytes()) {  // the latter fits in no chunk
    count_dropped(s);
    return nullptr;
  }
  hand_over_current_chunk(rt, t, *s);
  uint32_t c = rt->pool.pop_free();
  if (c == kNoChunk) {
    count_dropped(s);
    return nullptr;
  }
  t.chunk = c;
  t.cur = rt->pool.data(c);
  t.end = t.cur + rt->pool.chunk_bytes();
  return t.cur;
}

uint64_t* still_buffered(uint64_t* event, format::EventType type, uint32_t words) {
  Runtime* rt = g_runtime;
  const ThreadState& t = t_state;
  if (!event || !rt || t.chunk == kNoChunk) return nullptr;
  const auto* p = reinterpret_cast<const uint8_t*>(event);
  if (p < rt->pool.data(t.chunk) || p + format::raw_event_bytes(words) > t.cur) return nullptr;
  // The chunk could have gone to the writer and come back to this thread during the call: then
  // the place holds another event, most likely of another type.
  if (event[1] != (static_cast<uint64_t>(type) | (uint64_t{words} << 16))) return nullptr;
  return event;
}

void record_bytes_event(format::EventType type, const uint64_t* words, uint32_t nwords, const void* data, size_t len_in) {
  if (len_in > format::kMaxBytesField) {  // the writer could not encode it: counted, not recorded
    Runtime* rt = g_runtime;
    if (!rt || !rt->recording()) return;
    if (ThreadSlot* s = t_state.status == thread_finished ? nullptr : attach_thread(rt))
      count_dropped(s);
    else
      rt->untracked_events_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t len = static_cast<uint32_t>(len_in);
  uint32_t total = nwords + format::words_for_bytes(len);
  uint32_t bytes = format::raw_event_bytes(total);
  ThreadState& t = t_state;
  uint8_t* p = t.cur;
  if (reinterpret_cast<uintptr_t>(p) + bytes > reinterpret_cast<uintptr_t>(t.end)) {
    p = reserve_slow(bytes);
    if (!p) return;
  }
  format::RawEventHeader h{read_tsc(), static_cast<uint16_t>(type), static_cast<uint16_t>(total), 0};
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + sizeof h, words, 8ull * nwords);
  uint64_t n = len;
  uint8_t* b = p + sizeof h + 8ull * nwords;
  std::memcpy(b, &n, 8);
  std::memcpy(b + 8, data, len);
  std::memset(b + 8 + len, 0, 8ull * format::words_for_bytes(len) - 8 - len);
  __atomic_store_n(&t.cur, p + bytes, __ATOMIC_RELEASE);
}

AggregateTable* attach_aggregate_slow() {
  Runtime* rt = g_runtime;
  if (!rt || !rt->recording() || t_state.status == thread_finished) return nullptr;
  ThreadSlot* s = attach_thread(rt);
  if (!s) {
    if (t_state.status == thread_untracked) rt->untracked_events_dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (t_state.status != thread_recording) return nullptr;
  // Once per thread: the table is the thread's for the rest of the run (the writer reads it at exit).
  auto* tab = static_cast<AggregateTable*>(calloc(1, sizeof(AggregateTable)));
  if (!tab) return nullptr;
  s->aggregate = tab;
  t_state.aggregate = tab;
  return tab;
}

// pthread key destructor: the thread is ending; its partial chunk goes to the writer.
void on_thread_exit(void* slot_ptr) {
  Runtime* rt = g_runtime;
  auto* s = static_cast<ThreadSlot*>(slot_ptr);
  ThreadState& t = t_state;
  if (rt && rt->owner_pid == getpid() && rt->recording()) hand_over_current_chunk(rt, t, *s);
  t.status = thread_finished;
  t.cur = t.end = nullptr;
  t.aggregate = nullptr;  // the writer frees the table once it has summarised the thread
  s->active.store(0, std::memory_order_release);
  if (rt) rt->threads_exited.fetch_add(1, std::memory_order_release);
}

}  // namespace sigmatrace::profiler
