// Writes the seed corpus for the trace reader fuzzer: valid traces in each codec and mutilated
// copies (truncated, bit-flipped), so the fuzzer starts from the interesting structure.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/trace_writer.h"

using namespace sigmatrace::format;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);
  int n = 0;
  for (Codec codec : {Codec::none, Codec::zstd, Codec::lz4}) {
    std::string path = dir + "/valid_" + codec_name(codec) + ".sgt";
    TraceFileWriter w;
    if (!w.open(path, {{"host", "seed"}, {"rank", "0"}}, codec, 512)) return 1;
    for (uint64_t i = 0; i < 60; ++i) {
      w.add(1, EventType::user_mark, 1000 + i * 3, {i, i * i});
      w.add(2, EventType::ibv_post_send, 1001 + i * 3, {uint64_t{0x20 + i % 3}, uint64_t{1}, uint64_t{4096}, uint64_t{1}, int64_t{0}});
    }
    w.add(0, EventType::thread_info, 5000, {uint64_t{1}, std::string_view("worker")});
    w.add(0, EventType::file_end, 5001, {uint64_t{9}, uint64_t{121}, uint64_t{0}, uint64_t{0}});
    w.close();
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    ++n;
    for (size_t cut : {bytes.size() / 3, bytes.size() - 7}) {
      std::ofstream(dir + "/truncated_" + codec_name(codec) + "_" + std::to_string(cut) + ".sgt", std::ios::binary)
          .write(bytes.data(), static_cast<std::streamsize>(cut));
      ++n;
    }
    std::vector<char> flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x5a;
    std::ofstream(dir + "/flipped_" + codec_name(codec) + ".sgt", std::ios::binary)
        .write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
    ++n;
    // Two traces concatenated (cat a b > c), and a file whose chunks repeat.
    std::ofstream concat(dir + "/concatenated_" + codec_name(codec) + ".sgt", std::ios::binary);
    concat.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    concat.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ++n;
  }
  std::printf("wrote %d seeds to %s\n", n, dir.c_str());
  return 0;
}
