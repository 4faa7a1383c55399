// How the profiler calls the real function behind each of its wrappers (RealSymbol,
// real_function) and glibc's own dlsym/dlvsym. Below the providers and the GPU layer alike: the
// resolver hooks (providers/dl_resolver_hooks.h) only add what they saw to a RealSymbol.
//
// Runs on application threads but never on a data path: lookups happen once per name.
#pragma once
#include <atomic>

namespace sigmatrace::profiler {

// One interposed function: its name, the exported wrapper, and where the real one is kept.
struct RealSymbol {
  const char* name;
  const char* library;        // soname tried with RTLD_NOLOAD when RTLD_NEXT does not find it
  std::atomic<void*> address; // the real function, null until resolved
  std::atomic<bool> logged;   // "not found" reported once
};

// The real function behind a wrapper: RTLD_NEXT, else the named library if the program dlopened it,
// else what a dlsym/dlvsym hook saw. Null (logged once) when none exists.
void* resolve_real(RealSymbol& s);

template <typename Fn>
inline Fn real_function(RealSymbol& s) {
  void* p = s.address.load(std::memory_order_acquire);
  if (__builtin_expect(p == nullptr, 0)) p = resolve_real(s);
  return reinterpret_cast<Fn>(p);
}

// glibc's own dlsym / dlvsym (found in the loaded objects' symbol tables, never through the
// exported hooks of this library).
using DlsymFn = void* (*)(void*, const char*);
using DlvsymFn = void* (*)(void*, const char*, const char*);
DlsymFn real_dlsym();
DlvsymFn real_dlvsym();

}  // namespace sigmatrace::profiler
