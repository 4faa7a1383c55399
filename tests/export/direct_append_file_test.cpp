// DirectAppendFile (export/direct_append_file.h): what threads append concurrently lands whole,
// each thread's appends in its own order, on a file system that takes O_DIRECT and on one that
// refuses it, with blocks filled across appends and appends larger than a block; a write that
// fails is reported when the file is closed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "export/direct_append_file.h"
#include "support/file_contents.h"

namespace {

using sigmatrace::exporter::DirectAppendFile;

// A record: its length (4 bytes), the thread, its sequence number, then filler of that thread's letter.
std::string record(uint32_t thread, uint32_t seq, size_t length) {
  std::string r(length, static_cast<char>('a' + thread));
  const uint32_t head[3] = {static_cast<uint32_t>(length), thread, seq};
  std::memcpy(r.data(), head, sizeof head);
  return r;
}

void check_appends_from_threads(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = (dir / ("direct_append_test." + std::to_string(::getpid()))).string();
  DirectAppendFile f;
  std::string error;
  ASSERT_TRUE(f.open(path, &error)) << error;
  constexpr uint32_t kThreads = 4, kRecords = 300;
  auto length = [](uint32_t t, uint32_t k) -> size_t {
    if (k == 7) return DirectAppendFile::kBlockBytes + 12345;  // larger than a block
    return 12 + (k * 7919 + t * 104729) % 70000;
  };
  std::vector<std::thread> threads;
  size_t total = 0;
  for (uint32_t t = 0; t < kThreads; ++t)
    for (uint32_t k = 0; k < kRecords; ++k) total += length(t, k);
  for (uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint32_t k = 0; k < kRecords; ++k) {
        const std::string r = record(t, k, length(t, k));
        f.append(r.data(), r.size());
      }
    });
  for (auto& th : threads) th.join();
  ASSERT_TRUE(f.close(&error)) << error;

  const std::string got = sigmatrace::test::read_file(path);
  std::filesystem::remove(path);
  ASSERT_EQ(got.size(), total);
  uint32_t next[kThreads] = {};
  for (size_t at = 0; at < got.size();) {
    uint32_t head[3];
    ASSERT_LE(at + sizeof head, got.size());
    std::memcpy(head, got.data() + at, sizeof head);
    ASSERT_LT(head[1], kThreads) << "at " << at;
    ASSERT_EQ(head[2], next[head[1]]) << "thread " << head[1] << "'s appends out of order at " << at;
    ASSERT_EQ(head[0], length(head[1], head[2]));
    ASSERT_EQ(got.substr(at, head[0]), record(head[1], head[2], head[0])) << "a record torn at " << at;
    ++next[head[1]];
    at += head[0];
  }
  for (uint32_t t = 0; t < kThreads; ++t) EXPECT_EQ(next[t], kRecords);
}

}  // namespace

TEST(DirectAppendFile, ConcurrentAppendsLandWholeAndInEachThreadsOrder) { check_appends_from_threads(std::filesystem::temp_directory_path()); }

TEST(DirectAppendFile, OnAFileSystemThatRefusesODirect) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm (tmpfs) on this machine";
  check_appends_from_threads("/dev/shm");
}

TEST(DirectAppendFile, AWriteThatFailsIsReportedAtClose) {
  DirectAppendFile f;
  std::string error;
  if (!f.open("/dev/full", &error)) GTEST_SKIP() << "cannot open /dev/full: " << error;
  const std::string bytes(DirectAppendFile::kBlockBytes + 100, 'x');
  f.append(bytes.data(), bytes.size());
  EXPECT_FALSE(f.close(&error));
  EXPECT_NE(error.find("cannot write /dev/full"), std::string::npos) << error;
}
