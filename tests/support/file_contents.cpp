// See file_contents.h.
#include "support/file_contents.h"

#include <fstream>
#include <iterator>

namespace sigmatrace::test {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace sigmatrace::test
