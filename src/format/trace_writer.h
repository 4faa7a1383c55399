// Writes a trace file outside the profiler: synthetic experiments (benchmarks, analysis tests),
// fuzz seeds, format round-trip tests. Same file layout and chunk encoding as the profiler's
// writer, but with ordinary buffered I/O and allocation.
#pragma once
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "format/chunk_sealer.h"
#include "format/schema.h"

namespace sigmatrace::format {

struct EventField {
  EventField(uint64_t v) : word(v) {}                          // NOLINT: implicit on purpose
  EventField(int64_t v) : word(static_cast<uint64_t>(v)) {}    // NOLINT
  EventField(int v) : word(static_cast<uint64_t>(static_cast<int64_t>(v))) {}  // NOLINT
  EventField(unsigned v) : word(v) {}                          // NOLINT
  EventField(std::string_view s) : is_bytes(true), text(s) {}  // NOLINT
  EventField(const char* s) : is_bytes(true), text(s) {}       // NOLINT
  bool is_bytes = false;
  uint64_t word = 0;
  std::string_view text;
};

// Appends one raw record (format/raw_event.h) to buf.
void append_raw_event(std::vector<uint8_t>* buf, uint16_t type, uint64_t tsc, std::initializer_list<EventField> fields);
void append_raw_event(std::vector<uint8_t>* buf, uint16_t type, uint64_t tsc, const std::vector<EventField>& fields);

class TraceFileWriter {
 public:
  ~TraceFileWriter();
  bool open(const std::string& path, const Metadata& meta, Codec codec = Codec::zstd, size_t chunk_bytes = 256 * 1024);
  // Events of one thread (tid 0: the process stream) must be added in time order.
  void add(uint32_t tid, EventType type, uint64_t tsc, std::initializer_list<EventField> fields);
  void add(uint32_t tid, uint16_t type, uint64_t tsc, const std::vector<EventField>& fields);
  // Writes what is buffered for every thread; returns false on an I/O error.
  bool flush();
  bool close();
  uint64_t chunks_written() const { return seq_; }
  uint64_t events_written() const { return events_; }

 private:
  bool write_chunk(uint32_t tid, std::vector<uint8_t>* raw);
  FILE* f_ = nullptr;
  Codec codec_ = Codec::zstd;
  size_t chunk_bytes_ = 0;
  uint32_t seq_ = 0;
  uint64_t events_ = 0;
  bool ok_ = true;
  std::map<uint32_t, std::vector<uint8_t>> pending_;
  ChunkSealer sealer_;
};

}  // namespace sigmatrace::format
