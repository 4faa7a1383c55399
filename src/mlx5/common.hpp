// Byte-order and qualifier helpers shared by every mlx5 format header. Header-only; usable from
// host C++ and from CUDA device code (all hardware fields are big-endian).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define MLX5_HD __host__ __device__ __forceinline__
#else
#define MLX5_HD inline
#endif

namespace sigmatrace::mlx5 {

MLX5_HD constexpr uint16_t bswap16(uint16_t v) { return uint16_t((v >> 8) | (v << 8)); }
MLX5_HD constexpr uint32_t bswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0x0000ff00u) | ((v << 8) & 0x00ff0000u) | (v << 24);
}
MLX5_HD constexpr uint64_t bswap64(uint64_t v) {
  return (uint64_t(bswap32(uint32_t(v))) << 32) | bswap32(uint32_t(v >> 32));
}
// Host order <-> big-endian. Every target we build for (x86-64, aarch64, CUDA) is little-endian.
MLX5_HD constexpr uint16_t be16(uint16_t v) { return bswap16(v); }
MLX5_HD constexpr uint32_t be32(uint32_t v) { return bswap32(v); }
MLX5_HD constexpr uint64_t be64(uint64_t v) { return bswap64(v); }

}  // namespace sigmatrace::mlx5
