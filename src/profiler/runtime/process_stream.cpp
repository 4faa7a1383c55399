// See process_stream.h. Records use the same raw layout as thread chunks (format/raw_event.h).
#include "profiler/runtime/process_stream.h"

#include <cstring>

#include "format/raw_event.h"

namespace sigmatrace::profiler {

void ProcessStream::append(format::EventType type, uint64_t tsc, std::initializer_list<FieldValue> fields) {
  uint32_t words = 0;
  for (const FieldValue& f : fields)
    words += f.is_bytes ? format::words_for_bytes(static_cast<uint32_t>(f.text.size())) : 1;
  format::RawEventHeader h{tsc, static_cast<uint16_t>(type), static_cast<uint16_t>(words), 0};
  std::lock_guard<std::mutex> lock(mu_);
  size_t at = buf_.size();
  buf_.resize(at + format::raw_event_bytes(words), 0);
  uint8_t* p = buf_.data() + at;
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  for (const FieldValue& f : fields) {
    if (!f.is_bytes) {
      std::memcpy(p, &f.word, 8);
      p += 8;
      continue;
    }
    uint64_t len = f.text.size();
    std::memcpy(p, &len, 8);
    if (len) std::memcpy(p + 8, f.text.data(), len);
    p += 8ull * format::words_for_bytes(static_cast<uint32_t>(len));
  }
}

void ProcessStream::take(std::vector<uint8_t>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(buf_);
}

}  // namespace sigmatrace::profiler
