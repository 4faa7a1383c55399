// Materialises provider_list.h: the providers' objects in initialisation order.
#include "profiler/providers/provider.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "profiler/providers/provider_list.h"

namespace sigmatrace::profiler {

#define SIGMATRACE_DECLARE_PROVIDER(name, object) extern const Provider object;
SIGMATRACE_PROVIDER_LIST(SIGMATRACE_DECLARE_PROVIDER)
#undef SIGMATRACE_DECLARE_PROVIDER

namespace {
const Provider* const kProviders[] = {
#define SIGMATRACE_PROVIDER_ADDRESS(name, object) &object,
    SIGMATRACE_PROVIDER_LIST(SIGMATRACE_PROVIDER_ADDRESS)
#undef SIGMATRACE_PROVIDER_ADDRESS
};
}  // namespace

std::span<const Provider* const> all_providers() { return kProviders; }

std::vector<std::string> provider_names() { return {std::begin(kProviderNames), std::end(kProviderNames)}; }

namespace {
// exec_hooks.cpp, exit_hooks.cpp, dl_resolver_hooks.cpp.
const char* const kRuntimeExports[] = {"execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle",
                                       "_exit",  "_Exit", "dlsym",  "dlvsym"};
}  // namespace
std::span<const char* const> runtime_exports() { return kRuntimeExports; }

bool provider_entry_point(const char* name) {
  for (const Provider* p : kProviders)
    for (const char* e : p->entry_points)
      if (strcmp(e, name) == 0) return true;
  return false;
}

bool env_names_another_library(const char* variable, std::string* which) {
  const char* path = getenv(variable);
  if (!path || !*path) return false;
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&env_names_another_library), &self) || !self.dli_fname) return false;
  char a[PATH_MAX], b[PATH_MAX];
  if (realpath(path, a) && realpath(self.dli_fname, b) && strcmp(a, b) == 0) return false;
  *which = path;
  return true;
}

}  // namespace sigmatrace::profiler
