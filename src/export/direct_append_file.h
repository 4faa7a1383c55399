// An output file that several threads append to, written past the page cache where the file
// system allows it (O_DIRECT): the analysis writes its timeline once and never reads it back, and
// copying it through the page cache was as much CPU as a tenth of the rest of the analysis. The
// appended bytes are gathered in aligned blocks under a lock; a full block is written at its own
// offset outside the lock, so a slow disk holds up no other appender. Where O_DIRECT is refused
// (tmpfs) or at the file's unaligned tail, ordinary writes.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "export/file_io.h"

namespace sigmatrace::exporter {

class DirectAppendFile {
 public:
  static constexpr size_t kBlockBytes = size_t{4} << 20;
  ~DirectAppendFile();
  // Creates (truncates) path. False with *error when it cannot.
  bool open(const std::string& path, std::string* error);
  void append(const void* bytes, size_t n);  // thread-safe; a write error is reported by close()
  // Writes what is gathered and closes; false with *error when any write failed.
  bool close(std::string* error);
  bool is_open() const { return fd_ >= 0; }

 private:
  void write_at(const uint8_t* p, size_t n, uint64_t offset);
  void close_fds();

  std::string path_;
  int fd_ = -1, direct_fd_ = -1;
  std::mutex mu_;
  AlignedBytes block_;
  size_t filled_ = 0;
  uint64_t block_offset_ = 0;  // where block_ goes in the file
  std::atomic<int> write_errno_{0};
};

}  // namespace sigmatrace::exporter
