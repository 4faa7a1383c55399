// See direct_append_file.h.
#include "export/direct_append_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sigmatrace::exporter {

DirectAppendFile::~DirectAppendFile() { close_fds(); }

void DirectAppendFile::close_fds() {
  if (fd_ >= 0) ::close(fd_), fd_ = -1;
  if (direct_fd_ >= 0) ::close(direct_fd_), direct_fd_ = -1;
}

bool DirectAppendFile::open(const std::string& path, std::string* error) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  direct_fd_ = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  block_ = aligned_bytes(kBlockBytes);
  if (!block_) {
    *error = "cannot allocate the write buffer of " + path;
    close_fds();
    return false;
  }
  return true;
}

void DirectAppendFile::write_at(const uint8_t* p, size_t n, uint64_t offset) {
  // O_DIRECT for the aligned part (every full block, the tail's aligned front); the rest, and
  // all of it where O_DIRECT is refused, through the page cache.
  const size_t aligned = direct_fd_ >= 0 ? n / kDirectIoAlignment * kDirectIoAlignment : 0;
  const size_t done = aligned && pwrite_all(direct_fd_, p, aligned, offset) ? aligned : 0;
  if (!pwrite_all(fd_, p + done, n - done, offset + done)) keep_first_errno(&write_errno_);
}

void DirectAppendFile::append(const void* bytes, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(bytes);
  std::vector<std::pair<AlignedBytes, uint64_t>> full;  // written after the lock is released
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!block_) return;
    while (n) {
      const size_t take = std::min(n, kBlockBytes - filled_);
      std::memcpy(block_.get() + filled_, p, take);
      filled_ += take, p += take, n -= take;
      if (filled_ < kBlockBytes) break;
      AlignedBytes next = aligned_bytes(kBlockBytes);
      if (!next) {
        write_errno_.store(ENOMEM);
        return;
      }
      full.emplace_back(std::move(block_), block_offset_);
      block_ = std::move(next);
      block_offset_ += kBlockBytes, filled_ = 0;
    }
  }
  for (auto& [block, offset] : full) write_at(block.get(), kBlockBytes, offset);
}

bool DirectAppendFile::close(std::string* error) {
  if (fd_ < 0) return false;
  if (block_ && filled_) write_at(block_.get(), filled_, block_offset_);
  block_.reset();
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  close_fds();
  const int e = write_errno_.load();
  if (e || !closed) {
    *error = "cannot write " + path_ + ": " + std::strerror(e ? e : errno);
    return false;
  }
  return true;
}

}  // namespace sigmatrace::exporter
