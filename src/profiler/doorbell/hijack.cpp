#include "profiler/doorbell/hijack.h"

#include <sys/mman.h>

#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "format/event_types.h"
#include "profiler/doorbell/poller.h"
#include "profiler/doorbell/uar_registry.h"
#include "profiler/doorbell/wqe_recovery.h"
#include "profiler/gpu/device_copy.h"
#include "profiler/runtime/log.h"
#include "profiler/runtime/recorder.h"

namespace sigmatrace::profiler::doorbell {

using format::EventType;
using format::UarMapOutcome;

namespace {

constexpr size_t kMaxRegistrations = 1024;
constexpr size_t kMaxShadows = 256;

// One successful cuMemHostRegister of a UAR range, per (address, context) as the stacks
// refcount them.
struct Registration {
  uintptr_t addr;
  uintptr_t ctx;
  UarPage uar;
};

// The page the GPU writes instead of one UAR page.
struct Shadow {
  uintptr_t uar_base = 0;
  uint32_t registrations = 0;  // live registrations of ranges of this UAR page
  void* host = nullptr;        // our page, pinned and mapped for the GPU; null until first mapped
  WatchedPage page;
};

std::mutex g_mutex;
Registration g_regs[kMaxRegistrations];
size_t g_reg_count = 0;
Shadow* g_shadows[kMaxShadows] = {};
DoorbellMode g_mode = DoorbellMode::forward;
const std::atomic<bool>* g_active = nullptr;
std::atomic<bool> g_failure_logged{false};
std::atomic<int> g_live_shadows{0};
DriverCalls g_driver{};  // the last set a wrapper passed (for before_uar_free, which has none)

uintptr_t current_context(const DriverCalls& d) {
  cuda::CUcontext c = nullptr;
  if (d.ctx_get_current) d.ctx_get_current(&c);
  return reinterpret_cast<uintptr_t>(c);
}

// Rare calls: recorded in every mode, aggregate included (the analysis needs them to attribute
// doorbell counts to GPUs and QPs).
bool control_events() { return g_active && g_active->load(std::memory_order_relaxed); }

Shadow* find_shadow(uintptr_t base) {
  for (Shadow* s : g_shadows)
    if (s && s->uar_base == base) return s;
  return nullptr;
}

Shadow* shadow_for(uintptr_t base) {
  if (Shadow* s = find_shadow(base)) return s;
  for (Shadow*& slot : g_shadows)
    if (!slot) return slot = new (std::nothrow) Shadow{base, 0, nullptr, {}};
  return nullptr;
}

const Registration* registration_covering(uintptr_t p) {
  for (size_t i = 0; i < g_reg_count; ++i)
    if (p >= g_regs[i].uar.base && p - g_regs[i].uar.base < kUarMappingBytes) return &g_regs[i];
  return nullptr;
}

void log_failure_once(const std::string& why) {
  if (!g_failure_logged.exchange(true))
    log_line("GPU doorbells of this process are not traced: %s; the application uses the real doorbell page", why.c_str());
}

// Maps a shadow page for the GPU and starts watching it. False with *why: nothing was changed.
bool start_shadow(const DriverCalls& d, Shadow* s, const UarPage& uar, std::string* why) {
  void* page = mmap(nullptr, kUarMappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    *why = "cannot allocate a shadow doorbell page";
    return false;
  }
  // A forked child must not share it: the GPU writes this page, and a child's write to it (or to
  // its own copy-on-write copy) must never hide a doorbell from the parent's poller.
  madvise(page, kUarMappingBytes, MADV_DONTFORK);
  if (cuda::CUresult r = d.host_register(page, kUarMappingBytes, cuda::kHostRegisterPortable | cuda::kHostRegisterDeviceMap)) {
    munmap(page, kUarMappingBytes);
    *why = "cuMemHostRegister of the shadow doorbell page failed with CUresult " + std::to_string(r);
    return false;
  }
  WatchedPage& w = s->page;
  w.shadow = static_cast<uint8_t*>(page);
  w.real = reinterpret_cast<volatile uint8_t*>(uar.base);
  w.page_id = uar.page_id;
  w.device_context = uar.context;
  set_registers(&w, static_cast<uint32_t>(uar.reg - uar.base) & (kUarMappingBytes - 8));
  // Where the doorbell records of QPs sharing the page are copied to when they lie in GPU memory:
  // allocated here, on the application's control path, when the page already has such QPs (the
  // stacks create their QPs before they map the page); a poller allocates it only for a page
  // that QPs come to share later.
  SendQueue on_page[WatchedPage::kMaxSharers];
  const int sharing = send_queues_on_uar(uar.context, uar.page_id, on_page, WatchedPage::kMaxSharers);
  bool gpu_records = false;
  for (int k = 0; k < sharing; ++k) gpu_records |= on_page[k].dbr_memory == format::SqMemory::gpu;
  if (sharing >= 2 && gpu_records) w.dbr_staging = static_cast<uint32_t*>(cuda::alloc_pinned(WatchedPage::kMaxSharers * sizeof(uint32_t)));
  w.state.store(page_watched);
  if (!watch(&w, why)) {
    cuda::free_pinned(w.dbr_staging);
    d.host_unregister(page);
    munmap(page, kUarMappingBytes);
    return false;
  }
  s->host = page;
  g_live_shadows.fetch_add(1, std::memory_order_release);
  return true;
}

void end_shadow(const DriverCalls& d, Shadow* s) {
  for (Shadow*& slot : g_shadows)
    if (slot == s) slot = nullptr;
  if (s->host) {
    g_live_shadows.fetch_sub(1, std::memory_order_release);
    if (!unwatch(&s->page)) return;  // a poller still reads it: leaked, not freed
    if (driver_calls_allowed()) d.host_unregister(s->host), cuda::free_pinned(s->page.dbr_staging);
    munmap(s->host, kUarMappingBytes);
  }
  delete s;
}

}  // namespace

void configure_hijack(const Config& config, const std::atomic<bool>* active) {
  g_active = active;
  g_mode = config.doorbells;
}

void after_host_register(const DriverCalls& d, void* p, size_t bytes, unsigned flags, cuda::CUresult result) {
  UarPage uar;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  if (!find_uar(addr, 0, &uar)) return;
  const uintptr_t ctx = current_context(d);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_driver = d;
  uint32_t refs = 0;
  if (result == cuda::kSuccess && g_reg_count < kMaxRegistrations) {
    g_regs[g_reg_count++] = Registration{addr, ctx, uar};
    if (Shadow* s = shadow_for(uar.base)) refs = ++s->registrations;
  }
  if (control_events())
    record<EventType::gpu_uar_register>(uint64_t{addr}, uint64_t{bytes}, uint64_t{flags}, uint64_t{ctx}, uint64_t{uar.page_id},
                                        uint64_t{refs}, int64_t{result});
}

cuda::CUresult host_get_device_pointer(const DriverCalls& d, cuda::CUdeviceptr* out, void* p, unsigned flags) {
  cuda::CUresult r = d.host_get_device_pointer(out, p, flags);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  const Registration* reg = registration_covering(addr);
  if (!reg) return r;
  const UarPage uar = reg->uar;
  const uintptr_t ctx = current_context(d);
  const uint64_t real_ptr = (r == cuda::kSuccess && out) ? *out : 0;
  UarMapOutcome outcome = UarMapOutcome::hijacked;
  uint64_t shadow = 0;
  if (r != cuda::kSuccess || !out) {
    outcome = UarMapOutcome::failed;
  } else if (g_mode == DoorbellMode::off) {
    outcome = UarMapOutcome::doorbells_off;
  } else {
    Shadow* s = find_shadow(uar.base);
    std::string why;
    cuda::CUdeviceptr shadow_dev = 0;
    if (!s) {
      why = "no room for another shadow doorbell page";
    } else if (!s->host && !start_shadow(d, s, uar, &why)) {
      // why set
    } else if (cuda::CUresult e = d.host_get_device_pointer(&shadow_dev, s->host, 0)) {
      why = "cuMemHostGetDevicePointer of the shadow doorbell page failed with CUresult " + std::to_string(e);
    }
    if (!why.empty()) {
      outcome = UarMapOutcome::hijack_failed;
      log_failure_once(why);
    } else {
      shadow = reinterpret_cast<uintptr_t>(s->host);
      *out = shadow_dev + (addr - uar.base);
    }
  }
  if (control_events())
    record<EventType::gpu_uar_map>(uint64_t{addr}, uint64_t{ctx}, uint64_t{uar.page_id}, uint64_t{out ? *out : 0}, real_ptr, shadow,
                                   static_cast<uint64_t>(outcome), int64_t{r});
  return r;
}

cuda::CUresult host_unregister(const DriverCalls& d, void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const uintptr_t ctx = current_context(d);
  cuda::CUresult r = d.host_unregister(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  size_t i = 0;
  while (i < g_reg_count && !(g_regs[i].addr == addr && g_regs[i].ctx == ctx)) ++i;
  if (i == g_reg_count) {  // unregistered in another context than it was registered in
    i = 0;
    while (i < g_reg_count && g_regs[i].addr != addr) ++i;
  }
  if (i == g_reg_count) return r;
  const UarPage uar = g_regs[i].uar;
  uint32_t refs = 0;
  if (r == cuda::kSuccess) {
    g_regs[i] = g_regs[--g_reg_count];
    if (Shadow* s = find_shadow(uar.base)) {
      refs = --s->registrations;
      if (refs == 0) end_shadow(d, s);
    }
  } else if (Shadow* s = find_shadow(uar.base)) {
    refs = s->registrations;
  }
  if (control_events())
    record<EventType::gpu_uar_unregister>(uint64_t{addr}, uint64_t{ctx}, uint64_t{uar.page_id}, uint64_t{refs}, int64_t{r});
  return r;
}

bool doorbells_hijacked() { return g_live_shadows.load(std::memory_order_acquire) > 0; }

void before_uar_free(uintptr_t base) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Shadow* s = find_shadow(base);
  if (!s) return;
  for (size_t i = 0; i < g_reg_count;)
    if (g_regs[i].uar.base == base) g_regs[i] = g_regs[--g_reg_count];
    else ++i;
  if (g_driver.host_unregister) end_shadow(g_driver, s);
}

}  // namespace sigmatrace::profiler::doorbell
