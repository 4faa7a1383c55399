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

#include "profiler/doorbell/watched_page.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::doorbell {


// Recording settings, once from configure_doorbells (doorbell_subsystem.h): recording while
// *active; aggregate mode counts.
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
