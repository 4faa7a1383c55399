// A whole file read into memory, for tests that inspect or damage what a run wrote.
#pragma once
#include <string>

namespace sigmatrace::test {
// The file's bytes; empty when it cannot be read (tests assert on what they expected to find).
std::string read_file(const std::string& path);
}  // namespace sigmatrace::test
