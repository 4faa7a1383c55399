// See writer.h. Runs on its own thread with all signals blocked; the only code that does file I/O
// during the run.
#include "profiler/runtime/writer.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/raw_event.h"
#include "profiler/runtime/clock_calibration.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/runtime.h"

namespace sigmatrace::profiler {

using format::EventType;

namespace {
void sleep_us(uint64_t us) {
  timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
uint64_t monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}
}  // namespace

bool Writer::start() {
  sealer_.reserve(rt_->pool.chunk_bytes());
  process_slot_ = rt_->max_slots;
  events_per_slot_.assign(rt_->max_slots + 1, 0);
  chunks_lost_per_slot_.assign(rt_->max_slots + 1, 0);
  events_lost_per_slot_.assign(rt_->max_slots + 1, 0);
  announced_gen_.assign(rt_->max_slots, 0);
  summarised_gen_.assign(rt_->max_slots, 0);
  retiring_.reserve(rt_->max_slots);
  if (rt_->config.writer_threads > 1) {
    parallel_ = pipeline_.start(rt_->config.writer_threads, rt_->pool.chunk_bytes());
    if (!parallel_) log_line("cannot start %u sealing threads; the writer thread seals alone", rt_->config.writer_threads);
  }
  struct stat st;
  file_bytes_ = fstat(rt_->trace_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  hang_.start(rt_->config.hang_dump_s);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the writer must never run the application's handlers
  int rc = pthread_create(&thread_, nullptr, &Writer::thread_main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc == 0;
}

bool Writer::on_writer_thread() const { return pthread_equal(pthread_self(), thread_) || pipeline_.on_sealing_thread(); }

void* Writer::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "sigmatrace-wr");
  static_cast<Writer*>(self)->run();
  return nullptr;
}

void Writer::fail(int err) {
  if (io_failed_) return;
  io_failed_ = true;
  if (!failure_logged_) io_errno_ = err;
  // A chunk written in part would be read as damage: cut the file back to its last whole chunk.
  if (ftruncate(rt_->trace_fd, static_cast<off_t>(file_bytes_)) != 0 && !failure_logged_)
    log_line("cannot cut %s back to its last whole chunk (%s): a reader reports the rest as damage",
             rt_->trace_path.c_str(), strerror(errno));
  // What the failed write left may be too little for the summary (none at all when the disk filled
  // at a chunk's end): the last chunk a thread wrote gives its room up now, its events counted as
  // lost, so the file can still say what was lost. Later chunks of the process stream go with it
  // and are written again with the summary.
  for (bool thread_chunk = false; !thread_chunk && give_up_last_chunk(&carried_, &thread_chunk);) {
  }
  if (failure_logged_) return;
  failure_logged_ = true;
  log_line("cannot write %s (%s): events from now on (and the last chunk written, to make room for the summary) are counted as lost, not written", rt_->trace_path.c_str(),
           strerror(err));
}

bool Writer::write_all(const void* a, size_t an, const void* b, size_t bn) {
  if (io_failed_) return false;
  iovec iov[2] = {{const_cast<void*>(a), an}, {const_cast<void*>(b), bn}};
  int idx = 0;
  while (idx < 2) {
    ssize_t n = writev(rt_->trace_fd, iov + idx, 2 - idx);
    if (n < 0 || (n == 0 && iov[idx].iov_len)) {
      if (n < 0 && errno == EINTR) continue;
      fail(n < 0 ? errno : ENOSPC);
      return false;
    }
    size_t left = static_cast<size_t>(n);
    while (idx < 2 && left >= iov[idx].iov_len) left -= iov[idx++].iov_len;
    if (idx < 2) {
      iov[idx].iov_base = static_cast<char*>(iov[idx].iov_base) + left;
      iov[idx].iov_len -= left;
    }
  }
  file_bytes_ += an + bn;
  return true;
}

void Writer::write_chunk(uint32_t slot, uint32_t tid, const uint8_t* raw, size_t raw_bytes) {
  format::ChunkSealer::Sealed sealed;
  if (!sealer_.seal(raw, raw_bytes, tid, seq_, rt_->config.codec, 1, &sealed)) return;
  uint64_t offset = file_bytes_;
  if (write_sealed(slot, &sealed) && slot == process_slot_)
    remember_written(slot, offset, sealed.encoded.events, raw, raw_bytes);
}

bool Writer::write_sealed(uint32_t slot, format::ChunkSealer::Sealed* sealed, bool count_if_lost) {
  if (sealed->header.seq != seq_) format::ChunkSealer::renumber(&sealed->header, seq_);
  malformed_ += sealed->encoded.malformed;
  uint64_t offset = file_bytes_;
  if (write_all(&sealed->header, sizeof sealed->header, sealed->payload, sealed->payload_bytes)) {
    ++seq_;
    ++chunks_written_;
    events_written_ += sealed->encoded.events;
    events_per_slot_[slot] += sealed->encoded.events;
    if (slot != process_slot_) thread_chunks_written_ += 1;
    if (slot != process_slot_) remember_written(slot, offset, sealed->encoded.events, nullptr, 0);
    return true;
  }
  if (count_if_lost) count_lost_chunk(slot, sealed->encoded.events);
  return false;
}

void Writer::count_lost_chunk(uint32_t slot, uint64_t events) {
  ++chunks_lost_per_slot_[slot];
  events_lost_per_slot_[slot] += events;
  ++chunks_lost_;
  events_lost_ += events;
}

void Writer::remember_written(uint32_t slot, uint64_t offset, uint64_t events, const uint8_t* process_raw,
                              size_t raw_bytes) {
  if (revocable_.size() < kRevocableChunks) revocable_.resize(kRevocableChunks);
  if (revocable_used_ == kRevocableChunks) {
    std::rotate(revocable_.begin(), revocable_.begin() + 1, revocable_.end());  // the oldest gives way
    --revocable_used_;
  }
  WrittenChunk& w = revocable_[revocable_used_++];
  w.offset = offset, w.events = events, w.slot = slot;
  w.process_raw.assign(process_raw, process_raw + raw_bytes);
}

bool Writer::give_up_last_chunk(std::vector<uint8_t>* carried, bool* thread_chunk) {
  if (!revocable_used_) return false;
  WrittenChunk& w = revocable_[revocable_used_ - 1];
  *thread_chunk = w.slot != process_slot_;
  if (ftruncate(rt_->trace_fd, static_cast<off_t>(w.offset)) != 0) return false;
  --revocable_used_;
  file_bytes_ = w.offset;
  --seq_;
  --chunks_written_;
  events_written_ -= w.events;
  events_per_slot_[w.slot] -= w.events;
  if (*thread_chunk) count_lost_chunk(w.slot, w.events);
  else carried->insert(carried->begin(), w.process_raw.begin(), w.process_raw.end());
  return true;
}

bool Writer::drain_full_chunks() {
  if (parallel_) return drain_full_chunks_in_parallel();
  bool any = false;
  for (uint32_t c; (c = rt_->pool.pop_full()) != kNoChunk;) {
    any = true;
    if (rt_->config.debug_writer_delay_us) sleep_us(rt_->config.debug_writer_delay_us);
    ChunkMeta m = rt_->pool.meta(c);
    write_chunk(m.slot, m.tid, rt_->pool.data(c), m.used_bytes);
    rt_->pool.push_free(c);
  }
  return any;
}

bool Writer::drain_full_chunks_in_parallel() {
  bool any = false;
  for (;;) {
    for (uint32_t c; !pipeline_.full() && (c = rt_->pool.pop_full()) != kNoChunk;) {
      any = true;
      if (rt_->config.debug_writer_delay_us) sleep_us(rt_->config.debug_writer_delay_us);
      ChunkMeta m = rt_->pool.meta(c);
      SealPipeline::Job job;
      job.chunk = c, job.slot = m.slot, job.tid = m.tid;
      job.raw = rt_->pool.data(c), job.raw_bytes = m.used_bytes, job.codec = rt_->config.codec;
      pipeline_.submit(job);
    }
    if (pipeline_.empty()) return any;
    // In the order handed out, which is the order the threads handed their chunks over.
    SealPipeline::Job& done = pipeline_.wait_oldest();
    if (done.sealed) write_sealed(done.slot, &done.out);
    rt_->pool.push_free(done.chunk);
    pipeline_.release_oldest();
  }
}

void Writer::emit_new_thread_infos() {
  uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  for (uint32_t i = 0; i < used; ++i) {
    ThreadSlot& s = rt_->slots[i];
    // The generation is bumped after the occupant has filled the slot in: 0 = not yet published.
    uint32_t gen = s.generation.load(std::memory_order_acquire);
    if (!gen || gen == announced_gen_[i]) continue;
    announced_gen_[i] = gen;
    rt_->process_stream.append(EventType::thread_info, read_tsc(),
                               {uint64_t{s.tid}, std::string_view(s.name, strnlen(s.name, sizeof s.name))});
  }
}

uint64_t Writer::summarise_slot(uint32_t i, uint64_t tsc) {
  ThreadSlot& s = rt_->slots[i];
  if (AggregateTable* tab = s.aggregate) {
    for (const AggregateEntry& e : tab->entries) {
      uint64_t kind = __atomic_load_n(&e.kind, __ATOMIC_ACQUIRE);
      if (!kind) continue;
      rt_->process_stream.append(EventType::aggregate_entry, tsc, {uint64_t{s.tid}, kind, e.a, e.b, e.count, e.bytes});
    }
  }
  // Dropped: never buffered (no free chunk) or buffered but not written (write failure).
  uint64_t dropped = s.dropped_events.load() + events_lost_per_slot_[i];
  rt_->process_stream.append(EventType::thread_summary, tsc,
                             {uint64_t{s.tid}, events_per_slot_[i] + events_lost_per_slot_[i], dropped,
                              chunks_lost_per_slot_[i], s.aggregate ? s.aggregate->overflow : uint64_t{0}});
  return dropped;
}

void Writer::retire_exited_threads() {
  uint64_t exited = rt_->threads_exited.load(std::memory_order_acquire);
  if (exited == exits_seen_) return;
  exits_seen_ = exited;
  uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  retiring_.clear();
  for (uint32_t i = 0; i < used; ++i) {
    ThreadSlot& s = rt_->slots[i];
    uint32_t gen = s.generation.load(std::memory_order_acquire);
    if (gen && gen != summarised_gen_[i] && !s.active.load(std::memory_order_acquire)) retiring_.push_back(i);
  }
  if (retiring_.empty()) return;
  // Their last chunks were handed over before they cleared `active`: write those first.
  drain_full_chunks();
  revocable_used_ = 0;
  emit_new_thread_infos();  // a thread may have come and gone between two writer rounds
  uint64_t tsc = read_tsc();
  for (uint32_t i : retiring_) {
    ThreadSlot& s = rt_->slots[i];
    dropped_by_retired_ += summarise_slot(i, tsc);
    free(s.aggregate);
    s.aggregate = nullptr;
    events_per_slot_[i] = chunks_lost_per_slot_[i] = events_lost_per_slot_[i] = 0;
    summarised_gen_[i] = s.generation.load(std::memory_order_relaxed);
    rt_->free_slots.push(rt_->slots, i);
  }
}

void Writer::flush_process_stream() {
  emit_new_thread_infos();
  rt_->process_stream.take(&process_raw_);
  if (!process_raw_.empty()) write_chunk(process_slot_, 0, process_raw_.data(), process_raw_.size());
}

uint64_t Writer::events_in_partial_chunk(uint32_t i, const uint8_t** base_out, size_t* bytes_out) {
  ThreadSlot& s = rt_->slots[i];
  if (!s.active.load(std::memory_order_acquire) || !s.state) return 0;
  uint32_t c = __atomic_load_n(&s.state->chunk, __ATOMIC_ACQUIRE);
  uint8_t* cur = __atomic_load_n(&s.state->cur, __ATOMIC_ACQUIRE);
  if (c == kNoChunk || !cur) return 0;
  uint8_t* base = rt_->pool.data(c);
  if (cur < base || cur > base + rt_->pool.chunk_bytes()) return 0;  // moved on meanwhile
  if (base_out) *base_out = base;
  if (bytes_out) *bytes_out = static_cast<size_t>(cur - base);
  return format::count_raw_events(base, static_cast<size_t>(cur - base));
}

void Writer::emit_thread_progress(uint64_t tsc) {
  uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  for (uint32_t i = 0; i < used; ++i) {
    ThreadSlot& s = rt_->slots[i];
    if (!s.tid) continue;
    uint64_t recorded = events_per_slot_[i] + events_lost_per_slot_[i] + events_in_partial_chunk(i, nullptr, nullptr);
    if (recorded) rt_->process_stream.append(EventType::thread_progress, tsc, {uint64_t{s.tid}, recorded});
  }
}

uint64_t Writer::progress_signature() const {
  // Not the process stream's records: the writer itself adds clock samples every second.
  uint64_t sig = thread_chunks_written_ * 0x9e3779b97f4a7c15ull + g_work.completions();
  const uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  for (uint32_t i = 0; i < used; ++i) {
    const ThreadSlot& s = rt_->slots[i];
    if (!s.active.load(std::memory_order_acquire) || !s.state) continue;
    sig = sig * 31 + reinterpret_cast<uintptr_t>(__atomic_load_n(&s.state->cur, __ATOMIC_ACQUIRE));
  }
  return sig;
}

void Writer::watch_for_hang(uint64_t now_ms) {
  HangDumpReason reason;
  uint64_t idle_ns = 0;
  if (!hang_.due(progress_signature(), now_ms, &reason, &idle_ns)) return;
  // Idle with nothing outstanding (a launcher waiting for its children, the passive side of
  // one-sided writes) is not stuck.
  if (reason == HangDumpReason::no_progress && !g_work.outstanding()) return;
  const uint64_t completions = g_work.completions();
  const uint64_t kernels = g_work.gpu_kernels_running.load(std::memory_order_relaxed);
  rt_->process_stream.append(EventType::hang_dump, read_tsc(), {static_cast<uint64_t>(reason), idle_ns, completions, kernels});
  flush_process_stream();
  log_line("%s: hang state recorded in %s (sigmatrace analyze names what each QP waits for)",
           reason == HangDumpReason::signal ? "SIGUSR1" : "no progress", rt_->trace_path.c_str());
}

void Writer::run() {
  uint64_t next_sync = monotonic_ms() + rt_->config.clock_sync_ms;
  uint32_t idle_us = 1000;
  while (!stop_.load(std::memory_order_acquire)) {
    bool busy = drain_full_chunks();
    retire_exited_threads();
    uint64_t now = monotonic_ms();
    if (now >= next_sync) {
      ClockSample s = take_clock_sample();
      rt_->process_stream.append(EventType::clock_sync, s.tsc, {s.realtime_ns, s.monotonic_ns});
      next_sync = now + rt_->config.clock_sync_ms;
      // Aggregate mode promises no I/O until exit: the samples wait in memory (~40 bytes each).
      if (rt_->config.mode != TraceMode::aggregate) {
        emit_thread_progress(s.tsc);
        flush_process_stream();
      }
    }
    if (hang_.on() && rt_->config.mode != TraceMode::aggregate) watch_for_hang(now);
    // Back off while idle (1 ms up to 10 ms) so an idle profiler costs next to nothing.
    idle_us = busy ? 1000 : (idle_us < 10000 ? idle_us + 1000 : 10000);
    if (!busy) sleep_us(idle_us);
  }
  hang_.stop();
  final_flush(static_cast<format::ExitReason>(exit_reason_.load()));
  done_.store(true, std::memory_order_release);
}

void Writer::final_flush(format::ExitReason reason) {
  drain_full_chunks();
  // Partial chunks of threads still running, up to what they had committed.
  uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  for (uint32_t i = 0; i < used; ++i) {
    const uint8_t* base = nullptr;
    size_t bytes = 0;
    if (events_in_partial_chunk(i, &base, &bytes)) write_chunk(i, rt_->slots[i].tid, base, bytes);
  }
  drain_full_chunks();  // chunks handed over by threads that exited meanwhile
  if (malformed_) log_line("%llu malformed events were skipped by the writer", static_cast<unsigned long long>(malformed_));
  ClockSample cs = take_clock_sample();
  bool failed = io_failed_;
  // The summary matters more than the last few chunks: while a full disk has no room for it, each
  // failed attempt gives a chunk back (see fail()).
  rt_->process_stream.take(&process_raw_);  // records not flushed yet
  carried_.insert(carried_.end(), process_raw_.begin(), process_raw_.end());
  for (;;) {
    io_failed_ = false;  // after a failure: one more attempt, for the summary only
    uint64_t dropped_total = append_final_records(cs, failed);
    rt_->process_stream.take(&process_raw_);
    process_raw_.insert(process_raw_.begin(), carried_.begin(), carried_.end());
    // The counts include this final chunk, so a reader can tell that nothing is missing.
    uint64_t in_this_chunk = format::count_raw_events(process_raw_.data(), process_raw_.size()) + 1;
    rt_->process_stream.append(EventType::file_end, cs.tsc,
                               {chunks_written_ + 1, events_written_ + in_this_chunk, dropped_total,
                                static_cast<uint64_t>(reason)});
    rt_->process_stream.take(&file_end_raw_);
    process_raw_.insert(process_raw_.end(), file_end_raw_.begin(), file_end_raw_.end());
    format::ChunkSealer::Sealed sealed;
    if (!sealer_.seal(process_raw_.data(), process_raw_.size(), 0, seq_, rt_->config.codec, 1, &sealed)) break;
    size_t revocable_before = revocable_used_;
    // Not counted as lost when it fails: it is built again, with the failure it met.
    if (write_sealed(process_slot_, &sealed, /*count_if_lost=*/false)) return;
    failed = true;
    if (revocable_used_ == revocable_before) break;  // fail() found nothing more to give up
  }
  // The file cannot say it: stderr is the only place left.
  log_line("%llu chunks (%llu events) were lost after the write failure, and the summary could not be written",
           static_cast<unsigned long long>(chunks_lost_), static_cast<unsigned long long>(events_lost_));
}

uint64_t Writer::append_final_records(const ClockSample& cs, bool failed) {
  uint32_t used = std::min(rt_->slots_used.load(std::memory_order_acquire), rt_->max_slots);
  // After a write failure the last chunk must name every thread again (threads already retired
  // were named in chunks that may be lost: their summaries are too, counted below).
  if (failed) announced_gen_.assign(announced_gen_.size(), 0);
  emit_new_thread_infos();
  rt_->process_stream.append(EventType::clock_sync, cs.tsc, {cs.realtime_ns, cs.monotonic_ns});
  uint64_t dropped_total = rt_->untracked_events_dropped.load() + dropped_by_retired_;
  for (uint32_t i = 0; i < used; ++i) {
    uint32_t gen = rt_->slots[i].generation.load(std::memory_order_acquire);
    if (gen && gen != summarised_gen_[i]) dropped_total += summarise_slot(i, cs.tsc);
  }
  if (rt_->untracked_events_dropped.load()) {
    // tid 0: events of threads beyond SIGMATRACE_MAX_THREADS, which had no slot.
    rt_->process_stream.append(EventType::thread_summary, cs.tsc,
                               {uint64_t{0}, uint64_t{0}, rt_->untracked_events_dropped.load(), uint64_t{0}, uint64_t{0}});
  }
  if (failed) {
    const char* err = strerror(io_errno_);
    rt_->process_stream.append(EventType::write_failure, cs.tsc,
                               {file_bytes_, chunks_lost_, events_lost_, std::string_view(err, strlen(err))});
  }
  return dropped_total;
}

bool Writer::finish(format::ExitReason reason, uint32_t timeout_ms) {
  exit_reason_.store(static_cast<int>(reason));
  stop_.store(true, std::memory_order_release);
  for (uint64_t waited_us = 0; !done_.load(std::memory_order_acquire); waited_us += 200) {
    if (timeout_ms && waited_us >= uint64_t{timeout_ms} * 1000) return false;
    sleep_us(200);
  }
  return true;
}

}  // namespace sigmatrace::profiler
