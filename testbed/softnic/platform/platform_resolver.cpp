// dlsym of the platform stand-in (platform.hpp): lookups of the CUDA entry points it stands in
// front of get its wrappers; everything else, RTLD_NEXT lookups by a tail call included (glibc
// then still sees the caller's address), is passed through untouched. (The CUDA runtime finds
// the driver with dlsym; dlvsym is left alone, which is also how glibc's own dlsym is found.)
#include <dlfcn.h>

#include <initializer_list>

#include "platform/platform.hpp"

namespace softnic::platform {

namespace {
void* libc_handle() {
  static void* h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  return h;
}
}  // namespace

// dlsym is this library's own; dlvsym reaches glibc (or an interposer in front of it, which
// returns glibc's definition for libc's handle). glibc has had dlsym in libc.so.6 since 2.34.
DlsymFn libc_dlsym() {
  static DlsymFn f = [] {
    void* p = nullptr;
    for (const char* v : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"})
      if (!p) p = dlvsym(libc_handle(), "dlsym", v);
    return reinterpret_cast<DlsymFn>(p);
  }();
  return f;
}

void* next_symbol(const char* name) {
  DlsymFn ds = libc_dlsym();
  return ds ? ds(RTLD_NEXT, name) : nullptr;
}

}  // namespace softnic::platform

using namespace softnic::platform;

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) noexcept {
  DlsymFn real = libc_dlsym();
  if (!real) return nullptr;
  if (handle == RTLD_NEXT) return real(handle, name);
  return cuda_substitute(name, real(handle, name), 0);
}
