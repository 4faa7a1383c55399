// What a provider (a module that instruments one library: ibverbs, mlx5dv, cuda, ucx, ...) gives the
// runtime: its init, its on/off switch and the functions it exports. From these alone the resolver
// hooks find its wrappers (dl_resolver_hooks.cpp) and the build generates the export map of
// libsigmatrace.so (export_map_main.cpp). Providers are listed in one place, provider_list.h.
// A provider whose init fails is disabled with one message; the others keep working.
#pragma once
#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/provider_kit.h"
#include "profiler/runtime/config.h"

namespace sigmatrace::profiler {

struct Provider {
  const char* name;
  const char* description;
  // Installs the provider's hooks. False, with *why, when it cannot work in this process.
  bool (*init)(const Config& config, std::string* why);
  // Set by the runtime once init succeeded; the provider's wrappers forward untouched while false.
  std::atomic<bool>* active;
  // Functions interposed by name: exported, and handed out by the dlsym/dlvsym hooks in place of
  // the real ones (null: none).
  const InterposedSymbolTable* interposed = nullptr;
  // Other functions it exports in place of a library's (hooks that libraries reach through their
  // PLT): the dlsym hooks hide them where that library is not loaded, as if the profiler were not there.
  std::span<const char* const> other_exports = {};
  // What is looked up in the profiler itself, by name: the public API (include/sigmatrace.h) and
  // the entry points of a tool library (NVTX's injection, NCCL's profiler plugin). Exported, and
  // always found.
  std::span<const char* const> entry_points = {};
};

// A static array, not a container: it must outlive every exit handler (no destructor runs).
std::span<const Provider* const> all_providers();
std::vector<std::string> provider_names();
// True, with *which, when the environment variable names a library other than libsigmatrace.so:
// another tool holds the place the profiler takes (NVTX_INJECTION64_PATH, NCCL_PROFILER_PLUGIN).
bool env_names_another_library(const char* variable, std::string* which);
// True when name is one of the providers' entry_points.
bool provider_entry_point(const char* name);
// What the runtime itself exports (exec and _exit hooks, the resolver hooks): with the
// providers' symbols, everything libsigmatrace.so exports.
std::span<const char* const> runtime_exports();

}  // namespace sigmatrace::profiler
