// What the analysis's output files share for writing at offsets, past the page cache (O_DIRECT)
// where the file system allows it: whole-buffer positioned reads and writes, buffers aligned for
// O_DIRECT, and the first write error of several threads kept for the file's close.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace sigmatrace::exporter {

inline constexpr size_t kDirectIoAlignment = 4096;  // O_DIRECT's alignment of buffers, offsets and lengths

struct FreeAligned {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t[], FreeAligned>;
// n bytes (rounded up to the alignment, as aligned_alloc wants) aligned for O_DIRECT; null when
// they cannot be allocated.
AlignedBytes aligned_bytes(size_t n);

// All n bytes at off, through short writes and EINTR; false (errno set) on an error.
bool pwrite_all(int fd, const void* p, size_t n, uint64_t off);
// All n bytes from off; false on an error or at the end of the file.
bool pread_all(int fd, void* p, size_t n, uint64_t off);

// Keeps errno (EIO when none is set) in *first unless an earlier failure is already there.
void keep_first_errno(std::atomic<int>* first);

}  // namespace sigmatrace::exporter
