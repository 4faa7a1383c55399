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
#include "format/trace_writer.h"

namespace sigmatrace::profiler {

using FieldValue = format::EventField;

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
