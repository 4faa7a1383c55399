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

#include "profiler/doorbell/doorbell_tracker.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::doorbell {

struct WatchedPage {
  uint8_t* shadow = nullptr;         // the page the GPU writes (pinned host memory of ours)
  volatile uint8_t* real = nullptr;  // the NIC's UAR page as the application mapped it
  uint32_t page_id = 0;
  uintptr_t device_context = 0;      // the ibv_context of its UAR: the device its QPs belong to
  // The doorbell register and its BlueFlame twin (mlx5 alternates between the two halves of a
  // 512-byte block): reg_addr's offset and that offset ^ 0x100.
  uint32_t offsets[2] = {};
  uint64_t last[2] = {};             // the newest value forwarded from each
  uint64_t last_body[2][8] = {};     // the last BlueFlame body forwarded from each (words 1..7)
  DoorbellTracker tracker;
  uint64_t doorbells = 0;            // changes seen (poller thread only)
  std::atomic<int> state{0};         // PageState
};
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

}  // namespace sigmatrace::profiler::doorbell
