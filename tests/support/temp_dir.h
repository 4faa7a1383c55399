// A fresh directory under /tmp for one test, removed afterwards (kept when SIGMATRACE_KEEP_TEST_DIRS is set).
#pragma once
#include <string>

namespace sigmatrace::test {
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};
}  // namespace sigmatrace::test
