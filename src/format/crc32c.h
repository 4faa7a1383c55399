// CRC-32C (Castagnoli) over byte ranges: integrity of trace file headers and chunks.
// Our own small table implementation: the profiler must not depend on zlib at run time.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sigmatrace::format {
uint32_t crc32c(const void* data, size_t length, uint32_t seed = 0);
}
