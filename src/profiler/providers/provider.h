// What a provider (a module that instruments one library: ibverbs, mlx5dv, cuda, ucx, ...) gives the
// runtime. Providers are listed in one place, provider_registry.cpp: adding one is a new file plus
// one line there. A provider whose init fails is disabled with one message; the others keep working.
#pragma once
#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "profiler/runtime/config.h"

namespace sigmatrace::profiler {

struct Provider {
  const char* name;
  const char* description;
  // Installs the provider's hooks. False, with *why, when it cannot work in this process.
  bool (*init)(const Config& config, std::string* why);
  // Set by the runtime once init succeeded; the provider's wrappers forward untouched while false.
  std::atomic<bool>* active;
};

// A static array, not a container: it must outlive every exit handler (no destructor runs).
std::span<const Provider* const> all_providers();
std::vector<std::string> provider_names();

}  // namespace sigmatrace::profiler
