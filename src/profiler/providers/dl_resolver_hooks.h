// The resolver hooks (dlsym, dlvsym) and the tables of interposed functions they hand wrappers out
// for (the real functions themselves: runtime/real_symbols.h). A program that resolves a traced function by name through dlsym/dlvsym on a specific
// handle (NCCL, NVSHMEM) would otherwise never see a preloaded wrapper; the hook returns the wrapper
// and remembers the real function it stands for.
//
// Runs on application threads but never on a data path: lookups happen once per name.
#pragma once
#include <atomic>
#include <cstddef>

#include "profiler/runtime/real_symbols.h"

namespace sigmatrace::profiler {

struct InterposedSymbol {
  RealSymbol* real;
  void* wrapper;
  const std::atomic<bool>* provider_active;  // the hook hands out the wrapper only while true
};

struct InterposedSymbolTable {
  const InterposedSymbol* symbols;
  size_t count;
  // Old-ABI versions (dlvsym) that have their own, differently laid out implementation: never
  // wrapped. Null: every version is wrapped.
  bool (*is_compat_version)(const char* name, const char* version) = nullptr;
};

}  // namespace sigmatrace::profiler
