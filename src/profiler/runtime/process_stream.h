// Events that belong to the process rather than to one thread (clock samples, thread names,
// provider status, rank updates, summaries). Rare and off the hot path, so a mutex is fine here.
// The writer drains it into chunks with tid 0.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string_view>
#include <vector>

#include "format/event_types.h"

namespace sigmatrace::profiler {

// One field of a process-stream event: an integer word or a byte string.
struct FieldValue {
  FieldValue(uint64_t v) : word(v) {}                        // NOLINT: implicit on purpose
  FieldValue(int64_t v) : word(static_cast<uint64_t>(v)) {}  // NOLINT
  FieldValue(std::string_view s) : is_bytes(true), text(s) {}  // NOLINT
  bool is_bytes = false;
  uint64_t word = 0;
  std::string_view text;
};

class ProcessStream {
 public:
  void append(format::EventType type, uint64_t tsc, std::initializer_list<FieldValue> fields);
  // Moves the buffered records into *out (cleared first).
  void take(std::vector<uint8_t>* out);

 private:
  std::mutex mu_;
  std::vector<uint8_t> buf_;
};

}  // namespace sigmatrace::profiler
