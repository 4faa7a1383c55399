// CRC-32C (Castagnoli). On x86-64 with SSE4.2 (checked at run time with cpuid, no library
// involved) the crc32 instruction does 8 bytes per step; elsewhere a slicing-by-1 table walk keeps
// the code portable. The reader checks every chunk with it, so it is on the analysis' hot path.
#include "format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace sigmatrace::format {
namespace {
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

uint32_t crc32c_table(const uint8_t* p, size_t length, uint32_t c) {
  for (size_t i = 0; i < length; ++i) c = kTable[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const uint8_t* p, size_t length, uint32_t c) {
  uint64_t c64 = c;
  for (; length >= 8; p += 8, length -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
  }
  c = static_cast<uint32_t>(c64);
  for (; length; ++p, --length) c = __builtin_ia32_crc32qi(c, *p);
  return c;
}

bool have_sse42() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
// Set at load time (no function-local static: no guard, no libstdc++ call in the preload library);
// a call before that uses the table, which gives the same result.
const bool g_have_sse42 = have_sse42();
#endif
}  // namespace

uint32_t crc32c(const void* data, size_t length, uint32_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (g_have_sse42) return ~crc32c_sse42(p, length, ~seed);
#endif
  return ~crc32c_table(p, length, ~seed);
}

}  // namespace sigmatrace::format
