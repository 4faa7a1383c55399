// How an idle doorbell poller waits for the next write to its page: with umonitor/umwait (Intel
// WAITPKG) or monitorx/mwaitx (AMD) when cpuid says the CPU has them, which wake the core on a
// store to the watched line (a GPU's PCIe write to host memory snoops it) without spinning;
// otherwise with `pause`. Neither machine this project runs on has them (the dev VM and the
// H200 host): the monitor paths are built but have not been exercised; docs/gpu-doorbells.md.
#pragma once
#include <cstdint>

#include "format/event_types.h"

namespace sigmatrace::profiler::doorbell {

// What this CPU offers (cpuid, asked once).
format::PollerWait best_wait();

// Waits until the cache line of addr is written or about `cycles` TSC cycles have passed. The
// line is armed first and idle(arg) asked after: a write that came before the arming (or to a
// line not watched) is not slept through; false from idle returns at once. With
// PollerWait::pause: one pause instruction (addr, cycles and idle unused).
void wait_for_write(format::PollerWait how, const volatile void* addr, uint32_t cycles, bool (*idle)(void*), void* arg);

#if defined(__x86_64__)
inline void cpu_relax() { __builtin_ia32_pause(); }
#else
inline void cpu_relax() { asm volatile("yield"); }
#endif

}  // namespace sigmatrace::profiler::doorbell
