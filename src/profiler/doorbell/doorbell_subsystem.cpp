// The doorbell subsystem's configuration and shutdown (doorbell_subsystem.h): one recording switch
// for the pollers, the hijack and WQE recovery, owned here rather than borrowed from a provider.
#include "profiler/doorbell/doorbell_subsystem.h"

#include <atomic>

#include "profiler/doorbell/hijack.h"
#include "profiler/doorbell/poller.h"
#include "profiler/gpu/kernel_markers.h"

namespace sigmatrace::profiler::doorbell {

namespace {
std::atomic<bool> g_recording{false};
}  // namespace

void configure_doorbells(const Config& config) {
  cuda::enable_kernel_markers(config.kernel_markers);
  configure_pollers(config, &g_recording);
  configure_hijack(config, &g_recording);
  g_recording.store(true, std::memory_order_release);
}

void quiesce_doorbells() {
  if (!g_recording.load(std::memory_order_acquire)) return;
  quiesce_pollers();
  cuda::report_kernel_markers();
}

void stop_doorbell_recording() { g_recording.store(false, std::memory_order_release); }

}  // namespace sigmatrace::profiler::doorbell
