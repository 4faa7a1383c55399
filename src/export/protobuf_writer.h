// A small append-only protobuf encoder (no libprotobuf at run time). Messages are written in place
// into one growing buffer: a nested message reserves one byte for its length and, when it ends
// longer than 127 bytes, moves its body up to make room for the longer varint. Trace events are
// almost all shorter, so a length costs one byte and the move is rare (a packet-sized memmove).
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

  // begin(field) ... end(token): a nested message written in place. Tokens of enclosing messages
  // stay valid: a body that moves is always the innermost open one.
  size_t begin(uint32_t field) {
    tag(field, kLen);
    buf_.push_back('\0');
    return buf_.size();
  }
  void end(size_t token) {
    const size_t n = buf_.size() - token;
    if (n < 0x80) {
      buf_[token - 1] = static_cast<char>(n);
      return;
    }
    char len[10];
    int k = 0;
    for (uint64_t v = n; v >= 0x80; v >>= 7) len[k++] = static_cast<char>(v | 0x80);
    len[k] = static_cast<char>(n >> (7 * k));
    ++k;
    buf_.insert(token - 1, static_cast<size_t>(k - 1), '\0');
    std::memcpy(&buf_[token - 1], len, static_cast<size_t>(k));
  }

 private:
  std::string buf_;
};

}  // namespace sigmatrace::exporter
