// See temp_dir.h.
#include "support/temp_dir.h"

#include <cstdlib>
#include <filesystem>

namespace sigmatrace::test {
TempDir::TempDir() {
  char tmpl[] = "/tmp/sigmatrace-test-XXXXXX";
  path_ = mkdtemp(tmpl);
}
TempDir::~TempDir() {
  if (!getenv("SIGMATRACE_KEEP_TEST_DIRS")) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}
}  // namespace sigmatrace::test
