// Doorbell pollers: threads of the profiler that watch the shadow pages GPU threads write their
// doorbells to, record every change, and forward it to the real NIC register with one store.
// One thread per page by default (SIGMATRACE_DOORBELL_PAGES_PER_POLLER serves several from one
// thread), optionally pinned (SIGMATRACE_DOORBELL_CPUS). A poller forwards as long as its page is
// mapped, whether or not the profiler is still recording: the application depends on it.
//
// watch/unwatch/quiesce run on the control path (cuMemHostGetDevicePointer, cuMemHostUnregister,
// shutdown) and take a mutex; the polling loop itself takes none.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "format/event_types.h"
#include "profiler/doorbell/doorbell_tracker.h"
#include "profiler/runtime/config.h"

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
// Fills page's registers for a doorbell register at offset reg_offset of the page.
void set_registers(WatchedPage* page, uint32_t reg_offset);
enum PageState : int { page_watched = 0, page_retiring = 1, page_retired = 2 };

// Recording settings, once at provider init: recording while *active; aggregate mode counts.
void configure_pollers(const Config& config, const std::atomic<bool>* active);

// Starts watching page (a poller with room, or a new thread). False with *why when no thread
// could be started: the caller then leaves the application's mapping alone.
bool watch(WatchedPage* page, std::string* why);
// Makes a last pass over page (nothing the GPU wrote is left unforwarded), stops watching it
// and, if its poller has no page left, stops the thread. page can be freed afterwards when it
// returns true; false: its poller did not let it go (stuck), and it must be left mapped.
bool unwatch(WatchedPage* page);
// Returns once every poller has made a complete pass since the call and reported its QPs' WQE
// recovery (bounded: 50 ms, 1 s with WQE recovery): at shutdown, so that doorbells rung just
// before, and the WQEs of a batch not yet full, are recorded.
void quiesce_pollers();
// The application is ending CUDA context (alive: before the call; false: it already ended):
// every poller closes (or forgets) its copy streams in it and stops reading queues in its
// memory, before this returns (bounded: 200 ms). Returns how many pollers did.
uint32_t release_context(uintptr_t context, bool alive);

}  // namespace sigmatrace::profiler::doorbell
