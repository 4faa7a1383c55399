// On-disk layout of a trace file (docs/format.md is the user-facing description):
//   FileHeader | header body (metadata + schema) | Chunk* 
// Each Chunk is a ChunkHeader followed by stored_bytes of (possibly compressed) payload.
// Headers are little-endian and protected by CRC-32C so a reader can resynchronise after damage.
#pragma once
#include <cstdint>

namespace sigmatrace::format {

constexpr char kFileMagic[8] = {'S', 'G', 'M', 'T', 'R', 'A', 'C', 'E'};
constexpr uint16_t kFormatMajor = 1;  // incompatible changes
// Compatible additions: 1 write_failure, thread_progress, chunks_dropped; 2 the field-delta chunk
// encoding (a reader of 1.1 would misread those chunks, hence the bump).
constexpr uint16_t kFormatMinor = 2;
constexpr uint32_t kChunkMagic = 0x4b434753;  // "SGCK"
constexpr uint32_t kMaxChunkRawBytes = 64u << 20;  // sanity bound when reading
constexpr const char* kTraceFileSuffix = ".sgt";

struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t body_bytes;
  uint32_t body_crc;
  uint32_t header_crc;  // crc32c of the preceding 20 bytes
};
static_assert(sizeof(FileHeader) == 24);

enum class Codec : uint8_t { none = 0, zstd = 1, lz4 = 2 };

// How the decompressed payload encodes integer fields (docs/format.md): as they are (format 1.0,
// 1.1), or as zigzag changes since the previous event of the same type (since 1.2).
enum class ChunkEncoding : uint8_t { varints = 0, field_deltas = 1 };
constexpr uint8_t kLastChunkEncoding = 1;

struct ChunkHeader {
  uint32_t magic;
  uint8_t codec;
  uint8_t encoding;     // ChunkEncoding
  uint16_t reserved1;
  uint32_t tid;         // thread whose events these are; 0: the process stream (runtime events)
  uint32_t seq;         // per-process chunk sequence number: gaps show chunks lost on disk
  uint32_t event_count;
  uint32_t raw_bytes;   // size of the decompressed payload
  uint32_t stored_bytes;
  uint32_t payload_crc;
  uint64_t first_tsc;   // time base of the chunk's tsc deltas
  uint32_t reserved2;
  uint32_t header_crc;  // crc32c of the preceding 44 bytes
};
static_assert(sizeof(ChunkHeader) == 48);

}  // namespace sigmatrace::format
