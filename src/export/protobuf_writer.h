// A small append-only protobuf encoder (no libprotobuf at run time). Messages are written in place
// into one growing buffer, kept between clear()s, so a sequence's block buffer is allocated once.
// A nested message reserves one byte for its length and, when it ends longer than 127 bytes, moves
// its body up to make room for the longer varint. Trace events are almost all shorter, so a
// length costs one byte and the move is rare (a packet-sized memmove).
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace sigmatrace::exporter {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2 };

  ProtoWriter() = default;
  ProtoWriter(const ProtoWriter&) = delete;
  ProtoWriter& operator=(const ProtoWriter&) = delete;

  std::string_view buffer() const { return {data_.get(), size_}; }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

  // Each write makes room for itself first and then stores through a pointer: a std::string's
  // append per varint was most of the cost of building a packet.
  void varint(uint64_t v) {
    room(10);
    char* p = data_.get() + size_;
    while (v >= 0x80) *p++ = static_cast<char>(v | 0x80), v >>= 7;
    *p++ = static_cast<char>(v);
    size_ = static_cast<size_t>(p - data_.get());
  }
  void tag(uint32_t field, WireType wt) { varint((uint64_t{field} << 3) | wt); }
  // uint32/uint64/bool/enum, and int32/int64 as two's complement (no zigzag: no sint fields used).
  void u64(uint32_t field, uint64_t v) { tag(field, kVarint), varint(v); }
  void i64(uint32_t field, int64_t v) { tag(field, kVarint), varint(static_cast<uint64_t>(v)); }
  void fixed64(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    room(8);
    for (int i = 0; i < 8; ++i) data_[size_ + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
    size_ += 8;
  }
  void dbl(uint32_t field, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    fixed64(field, v);
  }
  void str(uint32_t field, std::string_view s) {
    tag(field, kLen);
    varint(s.size());
    room(s.size());
    if (!s.empty()) std::memcpy(data_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }

  // begin(field) ... end(token): a nested message written in place. Tokens of enclosing messages
  // stay valid: a body that moves is always the innermost open one.
  size_t begin(uint32_t field) {
    tag(field, kLen);
    room(1);
    data_[size_++] = '\0';
    return size_;
  }
  void end(size_t token) {
    const size_t n = size_ - token;
    if (n < 0x80) {
      data_[token - 1] = static_cast<char>(n);
      return;
    }
    char len[10];
    size_t k = 0;
    for (uint64_t v = n; v >= 0x80; v >>= 7) len[k++] = static_cast<char>(v | 0x80);
    len[k] = static_cast<char>(n >> (7 * k));
    ++k;
    room(k - 1);
    std::memmove(data_.get() + token - 1 + k, data_.get() + token, n);
    std::memcpy(data_.get() + token - 1, len, k);
    size_ += k - 1;
  }

 private:
  void room(size_t n) {
    if (__builtin_expect(capacity_ - size_ < n, 0)) grow(n);
  }
  [[gnu::noinline]] void grow(size_t n) {
    size_t c = capacity_ ? capacity_ * 2 : 4096;
    while (c - size_ < n) c *= 2;
    std::unique_ptr<char[]> bigger(new char[c]);
    if (size_) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = c;
  }
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace sigmatrace::exporter
