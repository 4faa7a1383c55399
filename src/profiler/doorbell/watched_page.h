// One doorbell page the GPU writes instead of the NIC's (the doorbell hijack's shadow page):
// every register a writer may store to, what a poller forwarded and recorded from each, the QPs
// that share the page, and the page-level steps of forwarding — a BlueFlame block read whole, a
// store to the real register. Touched by the poller thread that serves the page (poller.h),
// except `state`.
#pragma once
#include <atomic>
#include <cstdint>

#include "format/event_types.h"
#include "profiler/doorbell/doorbell_tracker.h"

namespace sigmatrace::profiler::doorbell {

// One register of a doorbell page the GPU may store to, and what the poller did with it.
struct DoorbellRegister {
  uint32_t offset = 0;
  int twin = -1;            // the other half of its BlueFlame pair (mlx5 alternates between them)
  bool send = true;         // a send doorbell; false: the CQ doorbell (arm requests), only forwarded
  uint64_t forwarded = 0;   // the newest value stored to the real register
  uint64_t forwards = 0;    // how many were
  uint64_t recorded = 0;    // the newest value recorded (behind forwarded after a forward-only look)
  uint64_t forwarded_tsc = 0;
  format::DoorbellKind forwarded_kind = format::DoorbellKind::doorbell;
  uint64_t body[8] = {};    // the last BlueFlame body forwarded (words 1..7)
};

struct WatchedPage {
  uint8_t* shadow = nullptr;         // the page the GPU writes (pinned host memory of ours)
  volatile uint8_t* real = nullptr;  // the NIC's UAR page as the application mapped it
  uint32_t page_id = 0;
  uintptr_t device_context = 0;      // the ibv_context of its UAR: the device its QPs belong to
  // Every register the GPU may write: the page's two BlueFlame registers and their twins, the
  // register the application mapped (and its twin) where that is another, and the CQ doorbell.
  static constexpr int kMaxRegisters = 8;
  DoorbellRegister registers[kMaxRegisters];
  int register_count = 0;
  int last_written = 0;              // the register forwarded last (the line a monitor watches)
  DoorbellTracker tracker;
  uint64_t doorbells = 0;            // values forwarded (poller thread only)
  // The QPs created on this UAR page (several share its registers: a doorbell one of them rang
  // may be overwritten by another's before the poller looks), refreshed when the table changes.
  static constexpr int kMaxSharers = 16;
  SendQueue sharers[kMaxSharers];
  int sharer_count = 0;
  uint64_t sharers_version = ~0ull;
  uint32_t* dbr_staging = nullptr;   // pinned: doorbell records in GPU memory are copied here
  // Values forwarded while the poller waited for a copy, in order, recorded at its next look
  // (when it overflows, the later ones are recorded merged: their delta still counts every WQEBB).
  struct Forwarded {
    uint64_t value, tsc;
    int reg;
    format::DoorbellKind kind;
  };
  static constexpr uint32_t kBacklog = 256;
  Forwarded backlog[kBacklog];
  uint32_t backlog_head = 0, backlog_tail = 0;  // poller thread only
  std::atomic<int> state{0};         // PageState
};
enum PageState : int { page_watched = 0, page_retiring = 1, page_retired = 2 };

// Fills page's registers for a doorbell register at offset reg_offset of the page: that register
// and its twin, the page's two BlueFlame registers with theirs, and the CQ doorbell.
void set_registers(WatchedPage* page, uint32_t reg_offset);

// A BlueFlame write at src whose first word is v: false when v is an 8-byte doorbell. Otherwise
// body (words 1..7) as it held still, with the first word checked again after it; false too when
// the body equals last_body (an 8-byte doorbell whose register kept an older copy).
bool read_blueflame(const uint64_t* src, uint64_t v, const uint64_t* last_body, uint64_t* body);

// One store of v (and a BlueFlame body before it, when given) to the NIC's register at off.
void store_real(WatchedPage& page, uint32_t off, uint64_t v, const uint64_t* body);

// Whether no register of the page (a WatchedPage*) holds a value not yet forwarded.
bool page_idle(void* page);

}  // namespace sigmatrace::profiler::doorbell
