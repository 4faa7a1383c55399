// WQE recovery (SIGMATRACE_DOORBELLS=wqe): what each GPU doorbell announced, read back from the
// QP's send queue and parsed with src/mlx5. One SqRecovery per QP a poller has seen ringing, owned
// by that poller thread (nothing here is shared or locked).
//
// The doorbell is forwarded first. The newly announced WQE slots are then copied into a staging
// ring of the queue's size — for a queue in GPU memory with an asynchronous copy on a dedicated
// non-blocking stream of its context (device_copy.h), for one in host memory with memcpy. The
// copy is enqueued in the poller's first idle moment after the doorbell (no change for
// kCopyIdleRounds looks), or once kWqeCopyChunk slots (a quarter of a smaller ring) wait, so that forwarding the next doorbell
// never waits behind the driver call and the NIC's own read of the WQEs is not contended
// (SIGMATRACE_WQE_COPY=doorbell enqueues it right after forwarding instead). Once `batch` slots
// are pending (never more than the ring holds), the copies are waited for and parsed: each
// doorbell is recorded with what its WQEs were, followed by them (gpu_wqe), stamped with its
// time. Only that doorbell waits. With SIGMATRACE_WQE_BATCH=sync the slots are copied and parsed
// before the doorbell is forwarded, so the GPU cannot have reused them: what a difference between
// the two modes shows is a race, not a parsing error.
//
// Integrity: a slot whose control segment names another WQE index or QP than its own was
// overwritten before it was read (lost_wqebbs); every copy is made twice, one after the other,
// and a WQE whose two copies differ was being written while it was read (the GPU reusing its
// slots): damaged, never parsed; a WQE that does not parse is damaged too; WQEBBs
// announced but unreadable are unread; a producer index that moved by more than the ring holds
// is an index error. All are reported per QP (gpu_wqe_stats).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "format/event_types.h"
#include "profiler/doorbell/send_queues.h"
#include "profiler/gpu/device_copy.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::doorbell {

void configure_recovery(const Config& config, const std::atomic<bool>* active);
// Looks without a doorbell after which a poller enqueues the copies still waiting (copy_pending),
// and how many slots may wait for one at most.
constexpr uint32_t kCopyIdleRounds = 64;
constexpr uint32_t kWqeCopyChunk = 32;
bool recovering_wqes();   // SIGMATRACE_DOORBELLS=wqe
// Whether the doorbell machinery may still call the CUDA driver (not after exit began, not in a
// forked child): copies that cannot be made count their WQEBBs unread.
bool driver_calls_allowed();
void forbid_driver_calls();
bool recovering_sync();   // and SIGMATRACE_WQE_BATCH=sync
// The pinned staging a queue's recovery copies to, in bytes (0: none needed: no WQE recovery, or
// the queue is not in GPU memory): two copies of the ring (see SqRecovery::walk).
size_t staging_bytes_for(const SendQueue& sq);

// The copy streams of one poller thread, one per CUDA context it has read a queue of.
class CopyStreams {
 public:
  cuda::DeviceCopyStream* for_context(uintptr_t context, std::string* why);
  void close_all();
  // The application ends context (alive: not yet): its streams are closed (or forgotten).
  void forget(uintptr_t context, bool alive);
  // What the poller does while it waits for a copy of these streams.
  void set_while_waiting(const cuda::WhileWaiting& w) { while_waiting_ = w; }
  const cuda::WhileWaiting& while_waiting() const { return while_waiting_; }

 private:
  cuda::WhileWaiting while_waiting_;
  static constexpr int kMax = 32;
  cuda::DeviceCopyStream streams_[kMax];
  int count_ = 0;
};

class SqRecovery {
 public:
  // For the QP qpn of the device context (the ibv_context of the doorbell page's UAR) ringing
  // through page page_id: looks its send queue up (none known: every doorbell is recorded at
  // once and its WQEBBs counted unread). Null only when out of memory.
  static SqRecovery* create(uintptr_t device_context, uint32_t qpn, uint32_t page_id, CopyStreams* streams);
  // (streams_ keeps the poller's streams: what to do while a copy is waited for.)
  ~SqRecovery();

  // A doorbell announcing WQEBBs up to pi (delta since the previous one). In sync mode, called
  // before it is forwarded.
  void doorbell(uint64_t tsc, uint16_t pi, uint32_t delta, format::DoorbellKind kind);
  // Enqueues the copies of the slots announced since the last ones (the poller is idle).
  void copy_pending();
  // Waits for the pending copies and parses them (at the batch threshold, when the poller goes
  // idle, before a report).
  void drain();
  // Drains and records this QP's gpu_wqe_stats (counters restart from zero).
  void report();
  // The application ends context (alive: not yet): a queue in its memory is drained while it
  // can be, and not read any more (its doorbells count their WQEBBs unread).
  void context_gone(uintptr_t context, bool alive);
  // False once the QP was destroyed or its number reused: the poller then reports and replaces it.
  bool current() const { return !known_ || still_current(ref_); }

 private:
  struct Pending {
    uint64_t tsc;
    uint64_t end;  // WQEBB counter after this doorbell's WQEs
    uint16_t pi;
    uint32_t delta;
    format::DoorbellKind kind;
  };
  static constexpr uint32_t kMaxPending = 512;

  SqRecovery() = default;
  bool copy_slots(uint64_t from, uint32_t count);
  void record_unread(const Pending& d);
  // Parses [parsed_, d.end): classify only (nothing counted or recorded), or record.
  format::DoorbellWqeClass walk(const Pending& d, bool record, uint32_t* wqes);
  // The WQE at counter as the first copy (check: the second) holds it, contiguous.
  const uint8_t* wqe_bytes(uint64_t counter, uint32_t wqebbs, bool check = false);

  SendQueue sq_;
  SendQueueRef ref_;
  bool known_ = false;
  uint32_t page_id_ = 0, slots_ = 0, mask_ = 0, batch_ = 0, copy_chunk_ = 1;
  uint8_t* staging_ = nullptr;  // 2 x slots_ WQEBBs: slot i of the ring at i, in the first copy and the check
  size_t staging_bytes_ = 0;
  uintptr_t staging_context_ = 0;  // the CUDA context its pinned staging belongs to
  bool pinned_ = false;
  cuda::DeviceCopyStream* stream_ = nullptr;
  CopyStreams* streams_ = nullptr;
  uint64_t announced_ = 0, copied_ = 0, parsed_ = 0;  // WQEBB counters (the 16-bit index extended)
  Pending pending_[kMaxPending];
  uint32_t npending_ = 0;
  bool copy_failed_ = false;             // a copy of the pending batch could not be enqueued
  uint8_t linear_[2][64 * 16];           // a WQE that wraps, made contiguous (at most 16 WQEBBs), per copy
  // Reported by gpu_wqe_stats:
  uint64_t recovered_ = 0, wqebbs_ = 0, lost_ = 0, damaged_ = 0, unread_ = 0, index_errors_ = 0;
  uint64_t copies_ = 0, batches_ = 0, wait_ns_ = 0, max_wait_ns_ = 0;
};

}  // namespace sigmatrace::profiler::doorbell
