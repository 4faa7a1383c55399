// What one doorbell value means for its QP: the producer index it announces and how many WQEBBs
// that is since the QP's previous doorbell. A poller sees only the newest value of a register,
// so two doorbells the GPU rang between two looks arrive as one; the producer-index delta still
// counts every WQEBB they announced, so nothing is lost, only merged (and says so: delta > the
// WQE's size). One tracker per doorbell page, touched only by the poller thread that owns it.
// With WQE recovery each QP's slot also holds the poller's SqRecovery of it.
#pragma once
#include <cstdint>

#include "mlx5/wqe.hpp"
#include "profiler/doorbell/send_queues.h"

namespace sigmatrace::profiler::doorbell {

class SqRecovery;

class DoorbellTracker {
 public:
  // QPs that ring through one page (NCCL and NVSHMEM share a UAR among a few QPs).
  static constexpr uint32_t kMaxQps = 128;

  struct Slot {
    uint32_t qpn;  // 0: free (QPN 0 is never a data QP)
    uint16_t pi;
    SqRecovery* recovery;
    bool known;          // the QP's send queue was known when it first rang (devx CREATE_QP seen)
    SendQueueRef queue;  // which one: a QP number the device reused is a new QP, from index 0
    int reg;             // the register it rang last (an index into the page's registers)
    bool from_record;    // pi was forwarded from its doorbell record, not yet rung through a register
  };
  struct Seen {
    uint32_t qpn;
    uint16_t pi;
    uint32_t delta;  // WQEBBs since this QP's previous doorbell (a new QP starts at index 0)
    Slot* slot;      // null: more QPs than slots
  };

  // device_context: the ibv_context of the page's UAR (QP numbers are per device).
  Seen observe(uint64_t value, uintptr_t device_context = 0) {
    mlx5::Doorbell d = mlx5::decode_doorbell(value);
    const uint16_t pi = mlx5::announced_index(d);
    Slot* s = slot(d.qpn, device_context);
    uint16_t before = 0;
    if (s) {
      if (s->known && !still_current(s->queue)) {  // destroyed, and its number given to a new QP
        SendQueue q;
        s->known = find_send_queue(device_context, d.qpn, &q, &s->queue);
        s->pi = 0;
      }
      before = s->pi;
      s->pi = pi;
    } else {
      ++untracked_;  // more QPs than slots: the delta is counted from 0 (reported as untracked)
    }
    return Seen{d.qpn, pi, uint32_t(uint16_t(pi - before)), s};
  }

  // The QP's slot, made if it has none yet (null: more QPs than slots).
  Slot* slot_of(uint32_t qpn, uintptr_t device_context = 0) { return slot(qpn, device_context); }
  uint64_t untracked_qps() const { return untracked_; }
  // The QPs seen so far (for draining and reporting their recoveries).
  template <typename F>
  void for_each(F&& f) {
    for (Slot& s : slots_)
      if (s.qpn) f(s);
  }

 private:
  Slot* slot(uint32_t qpn, uintptr_t device_context) {
    uint32_t i = (qpn * 2654435761u) % kMaxQps;
    for (uint32_t probe = 0; probe < kMaxQps; ++probe, i = (i + 1) % kMaxQps) {
      if (slots_[i].qpn == qpn) return &slots_[i];
      if (slots_[i].qpn == 0) {
        slots_[i] = Slot{qpn, 0, nullptr, false, {}, 0, false};
        SendQueue q;
        slots_[i].known = find_send_queue(device_context, qpn, &q, &slots_[i].queue);
        return &slots_[i];
      }
    }
    return nullptr;
  }
  Slot slots_[kMaxQps] = {};
  uint64_t untracked_ = 0;
};

}  // namespace sigmatrace::profiler::doorbell
