#include "profiler/doorbell/cpu_wait.h"

#include "profiler/runtime/tsc.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

namespace sigmatrace::profiler::doorbell {

format::PollerWait best_wait() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 5))) return format::PollerWait::umwait;  // WAITPKG
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 29))) return format::PollerWait::mwaitx;  // MONITORX
  return format::PollerWait::pause;
}

namespace {
__attribute__((target("waitpkg"))) void umwait_on(const volatile void* addr, uint32_t cycles, bool (*idle)(void*), void* arg) {
  _umonitor(const_cast<void*>(addr));
  if (idle(arg)) _umwait(1 /* C0.1: the fastest wake-up */, read_tsc() + cycles);
}
__attribute__((target("mwaitx"))) void mwaitx_on(const volatile void* addr, uint32_t cycles, bool (*idle)(void*), void* arg) {
  _mm_monitorx(const_cast<void*>(addr), 0, 0);
  if (idle(arg)) _mm_mwaitx(2 /* timer enabled */, 0, cycles);
}
}  // namespace

void wait_for_write(format::PollerWait how, const volatile void* addr, uint32_t cycles, bool (*idle)(void*), void* arg) {
  switch (how) {
    case format::PollerWait::umwait: umwait_on(addr, cycles, idle, arg); return;
    case format::PollerWait::mwaitx: mwaitx_on(addr, cycles, idle, arg); return;
    case format::PollerWait::pause: cpu_relax(); return;
  }
}

}  // namespace sigmatrace::profiler::doorbell

#else  // aarch64 (Grace): no monitor instruction is used; `yield` between polls

namespace sigmatrace::profiler::doorbell {
format::PollerWait best_wait() { return format::PollerWait::pause; }
void wait_for_write(format::PollerWait, const volatile void*, uint32_t, bool (*)(void*), void*) { cpu_relax(); }
}  // namespace sigmatrace::profiler::doorbell

#endif
