// Exported dlsym and dlvsym: when a program resolves a traced function by name (NCCL:
// dlvsym(h, "ibv_post_send", "IBVERBS_1.1"); NVSHMEM: dlsym(dlopen("libibverbs.so.1"), ...)), the
// real lookup runs first and, if it found the function, the wrapper is returned instead and the
// real address is kept for the wrapper. Names nobody traces, RTLD_NEXT lookups and failed lookups
// are passed through untouched (RTLD_NEXT by a tail call, so glibc still sees the caller's address).
// glibc's own dlsym/dlvsym, which these hooks call, are found by runtime/real_symbols.cpp.
// Runs on application threads, never on a data path; takes no lock of its own.
#include "profiler/providers/dl_resolver_hooks.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "profiler/providers/provider.h"

namespace sigmatrace::profiler {

namespace {

// Every name the providers interpose (provider.h: Provider::interposed), sorted once on the first
// lookup so that a dlsym of any name costs a binary search. Built without allocating: a malloc
// that resolves its own functions with dlsym (tcmalloc, jemalloc) may be what calls us first.
struct NamedSymbol {
  const char* name = nullptr;
  const InterposedSymbol* symbol = nullptr;
  const InterposedSymbolTable* table = nullptr;
};
constexpr size_t kMaxInterposed = 512;
NamedSymbol g_index[kMaxInterposed];
size_t g_index_size = 0;
std::atomic<int> g_index_state{0};  // 0 not built, 1 being built, 2 ready

void build_index() {
  size_t n = 0;
  for (const Provider* p : all_providers()) {
    if (!p->interposed) continue;
    for (size_t i = 0; i < p->interposed->count && n < kMaxInterposed; ++i)
      g_index[n++] = {p->interposed->symbols[i].real->name, &p->interposed->symbols[i], p->interposed};
  }
  std::sort(g_index, g_index + n, [](const NamedSymbol& a, const NamedSymbol& b) { return std::strcmp(a.name, b.name) < 0; });
  g_index_size = n;
}

// {nullptr, ...} when nobody interposes name.
NamedSymbol find_named(const char* name) {
  if (!name) return {};
  int state = g_index_state.load(std::memory_order_acquire);
  if (state != 2) {
    int expected = 0;
    if (state == 0 && g_index_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      build_index();
      g_index_state.store(2, std::memory_order_release);
    } else {  // another thread is sorting: look through the providers' tables directly
      for (const Provider* p : all_providers())
        if (const InterposedSymbolTable* t = p->interposed)
          for (size_t i = 0; i < t->count; ++i)
            if (std::strcmp(t->symbols[i].real->name, name) == 0) return {name, &t->symbols[i], t};
      return {};
    }
  }
  const NamedSymbol* end = g_index + g_index_size;
  const NamedSymbol* it = std::lower_bound(static_cast<const NamedSymbol*>(g_index), end, name, [](const NamedSymbol& e, const char* n) { return std::strcmp(e.name, n) < 0; });
  return it != end && std::strcmp(it->name, name) == 0 ? *it : NamedSymbol{};
}

// The wrapper in place of found when a provider interposes name (and this version), else found.
void* substitute(void* found, const char* name, const char* version) {
  if (!found) return found;
  const NamedSymbol n = find_named(name);
  const InterposedSymbol* s = n.symbol;
  if (!s || found == s->wrapper || (version && n.table->is_compat_version && n.table->is_compat_version(name, version)))
    return found;
  void* expected = nullptr;
  s->real->address.compare_exchange_strong(expected, found, std::memory_order_acq_rel);
  if (expected && expected != found) return found;  // a second copy of the library: not ours to trace
  if (!s->provider_active->load(std::memory_order_acquire)) return found;
  return s->wrapper;
}

}  // namespace

}  // namespace sigmatrace::profiler

using sigmatrace::profiler::real_dlsym;
using sigmatrace::profiler::real_dlvsym;

namespace {
// A global lookup (RTLD_DEFAULT, or a handle whose search reaches the preloaded library) can land
// on one of our shims when the library it stands for is not loaded at all. A program probing for
// that library ("is MPI / libibverbs here?") must get NULL then, exactly as without the profiler.
// The providers' entry points (our own API, NVTX's injection functions, NCCL's profiler plugin) are
// meant to be found (provider.h).
bool found_only_our_shim(void* found, const char* name, void* real_next) {
  static void* own_base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&sigmatrace::profiler::real_dlsym), &info);
    return info.dli_fbase;
  }();
  if (!found || sigmatrace::profiler::provider_entry_point(name)) return false;
  Dl_info info{};
  if (!dladdr(found, &info) || info.dli_fbase != own_base) return false;
  return real_next == nullptr;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) noexcept {
  sigmatrace::profiler::DlsymFn real = real_dlsym();
  if (__builtin_expect(real == nullptr, 0)) return nullptr;
  if (handle == RTLD_NEXT) return real(handle, name);  // a tail call: RTLD_NEXT stays relative to the caller
  void* found = real(handle, name);
  // RTLD_NEXT from here is relative to libsigmatrace.so: the definition behind our shim, if any.
  if (found && found_only_our_shim(found, name, real(RTLD_NEXT, name))) return nullptr;
  return sigmatrace::profiler::substitute(found, name, nullptr);
}

extern "C" __attribute__((visibility("default"))) void* dlvsym(void* handle, const char* name, const char* version) noexcept {
  sigmatrace::profiler::DlvsymFn real = real_dlvsym();
  if (__builtin_expect(real == nullptr, 0)) return nullptr;
  if (handle == RTLD_NEXT) return real(handle, name, version);
  void* found = real(handle, name, version);
  if (found && found_only_our_shim(found, name, real(RTLD_NEXT, name, version))) return nullptr;
  return sigmatrace::profiler::substitute(found, name, version);
}
