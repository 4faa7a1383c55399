// See process_stream.h. Records use the same raw layout as thread chunks (format/raw_event.h).
#include "profiler/runtime/process_stream.h"


namespace sigmatrace::profiler {

void ProcessStream::append(format::EventType type, uint64_t tsc, std::initializer_list<FieldValue> fields) {
  std::lock_guard<std::mutex> lock(mu_);
  format::append_raw_event(&buf_, static_cast<uint16_t>(type), tsc, fields);
}

void ProcessStream::take(std::vector<uint8_t>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(buf_);
}

}  // namespace sigmatrace::profiler
