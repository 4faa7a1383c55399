// A small append-only protobuf encoder (no libprotobuf at run time). Messages are written in place
// into one growing buffer: a nested message reserves four bytes for its length and back-fills them
// with a redundant (non-minimal) varint when it ends, which every protobuf reader accepts, so no
// message is ever built separately and copied. Limits: a nested message < 256 MiB.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sigmatrace::exporter {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2 };

  std::string& buffer() { return buf_; }
  size_t size() const { return buf_.size(); }
  void clear() { buf_.clear(); }

  void varint(uint64_t v) {
    char tmp[10];
    int n = 0;
    while (v >= 0x80) tmp[n++] = static_cast<char>(v | 0x80), v >>= 7;
    tmp[n++] = static_cast<char>(v);
    buf_.append(tmp, static_cast<size_t>(n));
  }
  void tag(uint32_t field, WireType wt) { varint((uint64_t{field} << 3) | wt); }
  // uint32/uint64/bool/enum, and int32/int64 as two's complement (no zigzag: no sint fields used).
  void u64(uint32_t field, uint64_t v) { tag(field, kVarint), varint(v); }
  void i64(uint32_t field, int64_t v) { tag(field, kVarint), varint(static_cast<uint64_t>(v)); }
  void fixed64(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    buf_.append(b, 8);
  }
  void dbl(uint32_t field, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    fixed64(field, v);
  }
  void str(uint32_t field, std::string_view s) {
    tag(field, kLen);
    varint(s.size());
    buf_.append(s.data(), s.size());
  }

  // begin(field) ... end(token): a nested message written in place.
  size_t begin(uint32_t field) {
    tag(field, kLen);
    buf_.append(4, '\0');
    return buf_.size();
  }
  void end(size_t token) {
    uint32_t n = static_cast<uint32_t>(buf_.size() - token);
    char* p = &buf_[token - 4];
    p[0] = static_cast<char>((n & 0x7f) | 0x80);
    p[1] = static_cast<char>(((n >> 7) & 0x7f) | 0x80);
    p[2] = static_cast<char>(((n >> 14) & 0x7f) | 0x80);
    p[3] = static_cast<char>((n >> 21) & 0x7f);
  }

 private:
  std::string buf_;
};

}  // namespace sigmatrace::exporter
