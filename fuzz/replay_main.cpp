// Runs the fuzz target over files and directories given on the command line (the seed corpus, or
// crashes found by libFuzzer), so the target is exercised in every build, not only with clang.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int replay_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 1;
}

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "trace_reader_fuzz_replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
    if (!S_ISDIR(st.st_mode)) {
      files += replay_file(argv[i]);
      continue;
    }
    DIR* d = opendir(argv[i]);
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') files += replay_file(std::string(argv[i]) + "/" + e->d_name);
    closedir(d);
  }
  std::printf("replayed %d inputs without a crash\n", files);
  return files > 0 ? 0 : 1;
}
