// See trace_writer.h.
#include "format/trace_writer.h"

#include <cstring>

#include "format/raw_event.h"

namespace sigmatrace::format {

namespace {
template <typename Fields>
void append_impl(std::vector<uint8_t>* buf, uint16_t type, uint64_t tsc, const Fields& fields) {
  uint32_t words = 0;
  for (const EventField& f : fields) words += f.is_bytes ? words_for_bytes(static_cast<uint32_t>(f.text.size())) : 1;
  RawEventHeader h{tsc, type, static_cast<uint16_t>(words), 0};
  size_t at = buf->size();
  buf->resize(at + raw_event_bytes(words), 0);
  uint8_t* p = buf->data() + at;
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  for (const EventField& f : fields) {
    if (!f.is_bytes) {
      std::memcpy(p, &f.word, 8);
      p += 8;
      continue;
    }
    uint64_t len = f.text.size();
    std::memcpy(p, &len, 8);
    if (len) std::memcpy(p + 8, f.text.data(), len);
    p += 8ull * words_for_bytes(static_cast<uint32_t>(len));
  }
}
}  // namespace

void append_raw_event(std::vector<uint8_t>* buf, uint16_t type, uint64_t tsc, std::initializer_list<EventField> fields) {
  append_impl(buf, type, tsc, fields);
}
void append_raw_event(std::vector<uint8_t>* buf, uint16_t type, uint64_t tsc, const std::vector<EventField>& fields) {
  append_impl(buf, type, tsc, fields);
}

TraceFileWriter::~TraceFileWriter() { close(); }

bool TraceFileWriter::open(const std::string& path, const Metadata& meta, Codec codec, size_t chunk_bytes) {
  f_ = fopen(path.c_str(), "wb");
  if (!f_) return false;
  codec_ = codec;
  chunk_bytes_ = chunk_bytes;
  sealer_.reserve(chunk_bytes + 4096);
  std::vector<uint8_t> prefix = encode_file_prefix(meta, Schema::builtin());
  ok_ = fwrite(prefix.data(), 1, prefix.size(), f_) == prefix.size();
  return ok_;
}

bool TraceFileWriter::write_chunk(uint32_t tid, std::vector<uint8_t>* raw) {
  ChunkSealer::Sealed s;
  if (sealer_.seal(raw->data(), raw->size(), tid, seq_, codec_, 1, &s)) {
    ok_ &= fwrite(&s.header, sizeof s.header, 1, f_) == 1;
    ok_ &= fwrite(s.payload, 1, s.payload_bytes, f_) == s.payload_bytes;
    ++seq_;
    events_ += s.encoded.events;
  }
  raw->clear();
  return ok_;
}

void TraceFileWriter::add(uint32_t tid, EventType type, uint64_t tsc, std::initializer_list<EventField> fields) {
  std::vector<uint8_t>& raw = pending_[tid];
  append_raw_event(&raw, static_cast<uint16_t>(type), tsc, fields);
  if (raw.size() >= chunk_bytes_) write_chunk(tid, &raw);
}

void TraceFileWriter::add(uint32_t tid, uint16_t type, uint64_t tsc, const std::vector<EventField>& fields) {
  std::vector<uint8_t>& raw = pending_[tid];
  append_raw_event(&raw, type, tsc, fields);
  if (raw.size() >= chunk_bytes_) write_chunk(tid, &raw);
}

bool TraceFileWriter::flush() {
  for (auto& [tid, raw] : pending_)
    if (!raw.empty()) write_chunk(tid, &raw);
  return ok_;
}

bool TraceFileWriter::close() {
  if (!f_) return ok_;
  flush();
  ok_ &= fclose(f_) == 0;
  f_ = nullptr;
  return ok_;
}

}  // namespace sigmatrace::format
