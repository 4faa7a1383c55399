// Fuzz target: any byte string as a trace file. The reader must never crash, hang or read out of
// bounds, whatever the damage; it may only report losses.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "format/trace_reader.h"

namespace {
// The reader takes a file: each input is written to one per process, removed when the process ends
// (a crash leaves it, beside the fuzzer's own copy of the input).
std::string g_path;
void remove_input_file() { unlink(g_path.c_str()); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_path.empty()) {
    g_path = "/tmp/sigmatrace-fuzz-" + std::to_string(getpid()) + ".sgt";
    atexit(remove_input_file);
  }
  const std::string& path = g_path;
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  sigmatrace::format::TraceFileReader reader;
  std::string error;
  if (!reader.open(path, &error)) return 0;
  sigmatrace::format::Chunk chunk;
  sigmatrace::format::DecodedEvent ev;
  uint64_t events = 0;
  while (reader.next_chunk(&chunk)) {
    sigmatrace::format::ChunkEventDecoder d(chunk.header, chunk.payload.data(), chunk.payload.size(), &reader.schema());
    while (d.next(&ev)) ++events;
  }
  if (reader.bytes_lost() > reader.file_bytes()) abort();  // a loss larger than the file is a reader bug
  return static_cast<int>(events & 0);
}
