// The doorbell subsystem as the lifecycle sees it: configured once from the runtime's
// configuration before the providers start, quiesced at shutdown before they stop. The providers
// (cuda: the hijack's entry points and launches; devx: UAR pages and send queues) only call into
// it; none of them configures it.
//
// Control path only (start-up and shutdown).
#pragma once
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler::doorbell {

// The pollers, the hijack, WQE recovery and the kernel markers take their settings from config;
// events are recorded from now on.
void configure_doorbells(const Config& config);
// At shutdown, while still recording: every poller's last pass and WQE report, then the kernel
// markers' account (bounded; quiesce_pollers says how long). Nothing when nothing was hijacked.
void quiesce_doorbells();
// After the last quiesce: nothing more is recorded. Forwarding goes on as long as pages are mapped.
void stop_doorbell_recording();

}  // namespace sigmatrace::profiler::doorbell
