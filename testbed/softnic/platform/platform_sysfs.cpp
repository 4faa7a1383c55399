// sysfs for the emulated devices (platform.hpp). Paths under /sys/class/infiniband and
// /sys/class/infiniband_verbs are looked up in a tree that softnic's libibverbs writes in
// /dev/shm (sysfs_tree.hpp: the layout the mlx5 kernel driver creates), so realpath, stat,
// access, open, fopen and opendir of them work as on a machine with the NIC. The tree is written
// on the first such lookup. Other paths are passed through untouched.
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "platform/platform.hpp"

extern "C" int softnic_write_sysfs(const char* root);  // softnic's libibverbs

namespace softnic::platform {
namespace {

constexpr const char* kClasses[] = {"/sys/class/infiniband", "/sys/class/infiniband_verbs"};

// Where the tree lies: one per user and emulated host (its contents depend on nothing else
// that varies between the processes of one host).
const char* tree_root() {
  static char root[256];
  static std::once_flag once;
  std::call_once(once, [] {
    const char* host = getenv("SOFTNIC_HOST");
    const char* devices = getenv("SOFTNIC_DEVICES");
    char name[64] = "";
    if (!host || !*host) gethostname(name, sizeof name - 1), host = name;
    unsigned long h = 5381;
    for (const char* c = host; *c; ++c) h = h * 33 + static_cast<unsigned char>(*c);
    snprintf(root, sizeof root, "/dev/shm/softnic-sysfs-%u-%lx-%s", unsigned(getuid()), h, devices && *devices ? devices : "1");
    if (int err = softnic_write_sysfs(root)) {
      fprintf(stderr, "softnic platform: cannot write the emulated sysfs tree in %s: %s; /sys/class/infiniband is not emulated\n",
              root, strerror(err));
      root[0] = 0;
    }
  });
  return root;
}

// path's place in the tree (in buf), or path itself.
const char* redirect(const char* path, char* buf, size_t size) {
  if (!path || strncmp(path, "/sys/class/infiniband", 21) != 0) return path;
  for (const char* c : kClasses) {
    size_t n = strlen(c);
    if (strncmp(path, c, n) != 0 || (path[n] != 0 && path[n] != '/')) continue;
    const char* root = tree_root();
    if (!*root) return path;
    snprintf(buf, size, "%s%s", root, path + 4);  // "/sys/class/..." -> root + "/class/..."
    return buf;
  }
  return path;
}

template <typename Fn>
Fn next(const char* name) {
  static_assert(sizeof(Fn) == sizeof(void*));
  return reinterpret_cast<Fn>(next_symbol(name));
}

}  // namespace
}  // namespace softnic::platform

using namespace softnic::platform;

#define SOFTNIC_PATH_BUF char redirected_[4096]; const char* where_ = redirect(path, redirected_, sizeof redirected_)
#define SOFTNIC_EXPORT_C extern "C" __attribute__((visibility("default")))

SOFTNIC_EXPORT_C char* realpath(const char* path, char* resolved) noexcept {
  static auto fn = next<char* (*)(const char*, char*)>("realpath");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, resolved) : nullptr;
}
SOFTNIC_EXPORT_C char* __realpath_chk(const char* path, char* resolved, size_t) noexcept { return realpath(path, resolved); }

SOFTNIC_EXPORT_C int access(const char* path, int mode) noexcept {
  static auto fn = next<int (*)(const char*, int)>("access");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, mode) : -1;
}

SOFTNIC_EXPORT_C int stat(const char* path, struct stat* st) noexcept {
  static auto fn = next<int (*)(const char*, struct stat*)>("stat");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, st) : -1;
}
SOFTNIC_EXPORT_C int lstat(const char* path, struct stat* st) noexcept {
  static auto fn = next<int (*)(const char*, struct stat*)>("lstat");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, st) : -1;
}
SOFTNIC_EXPORT_C int stat64(const char* path, struct stat64* st) noexcept {
  static auto fn = next<int (*)(const char*, struct stat64*)>("stat64");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, st) : -1;
}

// open and openat take a mode only with O_CREAT or O_TMPFILE.
static mode_t mode_of(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode_t(va_arg(ap, int)) : 0;
}
SOFTNIC_EXPORT_C int open(const char* path, int flags, ...) {
  static auto fn = next<int (*)(const char*, int, ...)>("open");
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, flags, mode) : -1;
}
SOFTNIC_EXPORT_C int open64(const char* path, int flags, ...) {
  static auto fn = next<int (*)(const char*, int, ...)>("open64");
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, flags, mode) : -1;
}
SOFTNIC_EXPORT_C int __open_2(const char* path, int flags) { return open(path, flags); }
SOFTNIC_EXPORT_C int __open64_2(const char* path, int flags) { return open64(path, flags); }
SOFTNIC_EXPORT_C int openat(int dirfd, const char* path, int flags, ...) {
  static auto fn = next<int (*)(int, const char*, int, ...)>("openat");
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_of(flags, ap);
  va_end(ap);
  SOFTNIC_PATH_BUF;
  return fn ? fn(dirfd, where_, flags, mode) : -1;
}

SOFTNIC_EXPORT_C FILE* fopen(const char* path, const char* mode) {
  static auto fn = next<FILE* (*)(const char*, const char*)>("fopen");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, mode) : nullptr;
}
SOFTNIC_EXPORT_C FILE* fopen64(const char* path, const char* mode) {
  static auto fn = next<FILE* (*)(const char*, const char*)>("fopen64");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, mode) : nullptr;
}

SOFTNIC_EXPORT_C DIR* opendir(const char* path) {
  static auto fn = next<DIR* (*)(const char*)>("opendir");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_) : nullptr;
}

SOFTNIC_EXPORT_C ssize_t readlink(const char* path, char* buf, size_t size) noexcept {
  static auto fn = next<ssize_t (*)(const char*, char*, size_t)>("readlink");
  SOFTNIC_PATH_BUF;
  return fn ? fn(where_, buf, size) : -1;
}
