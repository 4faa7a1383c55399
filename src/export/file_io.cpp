// See file_io.h.
#include "export/file_io.h"

#include <unistd.h>

#include <cerrno>

namespace sigmatrace::exporter {

AlignedBytes aligned_bytes(size_t n) {
  const size_t rounded = (n + kDirectIoAlignment - 1) / kDirectIoAlignment * kDirectIoAlignment;
  return AlignedBytes(static_cast<uint8_t*>(std::aligned_alloc(kDirectIoAlignment, rounded)));
}

bool pwrite_all(int fd, const void* bytes, size_t n, uint64_t off) {
  const uint8_t* p = static_cast<const uint8_t*>(bytes);
  while (n) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= static_cast<size_t>(w), off += static_cast<uint64_t>(w);
  }
  return true;
}

bool pread_all(int fd, void* bytes, size_t n, uint64_t off) {
  uint8_t* p = static_cast<uint8_t*>(bytes);
  while (n) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= static_cast<size_t>(r), off += static_cast<uint64_t>(r);
  }
  return true;
}

void keep_first_errno(std::atomic<int>* first) {
  int none = 0;
  first->compare_exchange_strong(none, errno ? errno : EIO);
}

}  // namespace sigmatrace::exporter
