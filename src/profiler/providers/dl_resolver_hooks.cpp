// Exported dlsym and dlvsym: when a program resolves a traced function by name (NCCL:
// dlvsym(h, "ibv_post_send", "IBVERBS_1.1"); NVSHMEM: dlsym(dlopen("libibverbs.so.1"), ...)), the
// real lookup runs first and, if it found the function, the wrapper is returned instead and the
// real address is kept for the wrapper. Names nobody traces, RTLD_NEXT lookups and failed lookups
// are passed through untouched (RTLD_NEXT by a tail call, so glibc still sees the caller's address).
//
// glibc's own dlsym/dlvsym cannot be found with dlsym (that would be this file's hook), so they are
// looked up in the loaded objects' dynamic symbol tables (GNU hash), skipping this library.
// Runs on application threads, never on a data path; takes no lock of its own.
#include "profiler/providers/dl_resolver_hooks.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "profiler/providers/provider.h"
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

using sigmatrace::profiler::real_dlsym;
using sigmatrace::profiler::real_dlvsym;

namespace {
// A global lookup (RTLD_DEFAULT, or a handle whose search reaches the preloaded library) can land
// on one of our shims when the library it stands for is not loaded at all. A program probing for
// that library ("is MPI / libibverbs here?") must get NULL then, exactly as without the profiler.
// Our own API (sigmatrace_*) is meant to be found, and so are the entry points NVTX looks up in
// its injection library (InitializeInjectionNvtx2, InitializeInjectionNvtxExtension).
bool own_entry_point(const char* name) {
  return std::strncmp(name, "sigmatrace_", 11) == 0 || std::strncmp(name, "InitializeInjectionNvtx", 23) == 0;
}
bool found_only_our_shim(void* found, const char* name, void* real_next) {
  static void* own_base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&sigmatrace::profiler::real_dlsym), &info);
    return info.dli_fbase;
  }();
  if (!found || own_entry_point(name)) return false;
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
