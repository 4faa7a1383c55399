// The real functions behind the profiler's wrappers: RTLD_NEXT, the named library if the program
// loaded it, or what the resolver hooks saw (providers/dl_resolver_hooks.cpp). glibc's own dlsym and
// dlvsym cannot be found with dlsym (that would be our hook), so they are looked up in the loaded
// objects' dynamic symbol tables (GNU hash), skipping this library.
// Runs on application threads, never on a data path (a lookup happens once per name); no lock.
#include "profiler/runtime/real_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "profiler/runtime/log.h"

namespace sigmatrace::profiler {

namespace {

std::atomic<DlsymFn> g_real_dlsym{nullptr};
std::atomic<DlvsymFn> g_real_dlvsym{nullptr};

uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<uint8_t>(*s);
  return h;
}

struct ElfLookup {
  const char* name;
  uintptr_t self_address;  // an address inside this library (skipped)
  void* found;
  bool found_default;      // the default version (not a hidden compat one)
};

bool object_contains(const dl_phdr_info* info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && address >= start && address < start + ph.p_memsz) return true;
  }
  return false;
}

int lookup_in_object(dl_phdr_info* info, size_t, void* data) {
  auto* req = static_cast<ElfLookup*>(data);
  if (object_contains(info, req->self_address)) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 0;
  // ld.so relocates these entries in place; the vDSO's are offsets.
  auto absolute = [info](ElfW(Addr) v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* hash = nullptr;
  const ElfW(Half)* versym = nullptr;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const ElfW(Sym)*>(absolute(d->d_un.d_ptr));
    else if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(absolute(d->d_un.d_ptr));
    else if (d->d_tag == DT_GNU_HASH) hash = reinterpret_cast<const uint32_t*>(absolute(d->d_un.d_ptr));
    else if (d->d_tag == DT_VERSYM) versym = reinterpret_cast<const ElfW(Half)*>(absolute(d->d_un.d_ptr));
  }
  if (!symtab || !strtab || !hash) return 0;
  const uint32_t nbuckets = hash[0], symoffset = hash[1], bloom_words = hash[2];
  if (nbuckets == 0) return 0;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(hash + 4);
  const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
  const uint32_t* chain = buckets + nbuckets;
  const uint32_t h = gnu_hash(req->name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return 0;
  for (;; ++i) {
    const uint32_t c = chain[i - symoffset];
    const ElfW(Sym)& s = symtab[i];
    if ((c | 1) == (h | 1) && s.st_shndx != SHN_UNDEF && s.st_value != 0 && ELF64_ST_TYPE(s.st_info) == STT_FUNC &&
        std::strcmp(strtab + s.st_name, req->name) == 0) {
      bool is_default = !versym || (versym[i] & 0x8000) == 0;
      if (!req->found || (is_default && !req->found_default)) {
        req->found = reinterpret_cast<void*>(info->dlpi_addr + s.st_value);
        req->found_default = is_default;
      }
      if (is_default) return 1;  // first object in load order with a default definition wins
    }
    if (c & 1) break;
  }
  return req->found ? 1 : 0;
}

void* find_libc_function(const char* name) {
  ElfLookup req{name, reinterpret_cast<uintptr_t>(&lookup_in_object), nullptr, false};
  dl_iterate_phdr(&lookup_in_object, &req);
  return req.found;
}

}  // namespace

DlsymFn real_dlsym() {
  DlsymFn f = g_real_dlsym.load(std::memory_order_acquire);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<DlsymFn>(find_libc_function("dlsym"));
    g_real_dlsym.store(f, std::memory_order_release);
  }
  return f;
}

DlvsymFn real_dlvsym() {
  DlvsymFn f = g_real_dlvsym.load(std::memory_order_acquire);
  if (__builtin_expect(f == nullptr, 0)) {
    f = reinterpret_cast<DlvsymFn>(find_libc_function("dlvsym"));
    g_real_dlvsym.store(f, std::memory_order_release);
  }
  return f;
}

void* resolve_real(RealSymbol& s) {
  void* p = s.address.load(std::memory_order_acquire);
  if (p) return p;
  int saved_errno = errno;
  if (DlsymFn ds = real_dlsym()) {
    p = ds(RTLD_NEXT, s.name);
    if (!p && s.library) {
      if (void* h = dlopen(s.library, RTLD_LAZY | RTLD_NOLOAD)) {
        p = ds(h, s.name);
        dlclose(h);
      }
    }
  }
  errno = saved_errno;
  if (p) {
    void* expected = nullptr;
    if (!s.address.compare_exchange_strong(expected, p, std::memory_order_acq_rel)) p = expected;
    return p;
  }
  if (!s.logged.exchange(true)) log_line("%s: the real function was not found; the call fails with ENOSYS", s.name);
  return nullptr;
}

}  // namespace sigmatrace::profiler
