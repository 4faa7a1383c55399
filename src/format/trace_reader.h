// Reads one trace file chunk by chunk (streaming: memory is bounded by one chunk), verifying every
// header and payload checksum. Damaged regions are skipped by resynchronising on the next valid
// chunk header; every skipped byte range and every missing chunk is reported in losses().
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "format/chunk_codec.h"
#include "format/file_layout.h"
#include "format/schema.h"

namespace sigmatrace::format {

struct LossRecord {
  uint64_t offset = 0;  // where the damage starts in the file
  uint64_t bytes = 0;   // bytes skipped
  std::string reason;
};

struct Chunk {
  ChunkHeader header{};
  uint64_t offset = 0;
  std::vector<uint8_t> payload;  // decompressed, header.raw_bytes long
};

class TraceFileReader {
 public:
  TraceFileReader() = default;
  TraceFileReader(const TraceFileReader&) = delete;
  TraceFileReader& operator=(const TraceFileReader&) = delete;
  ~TraceFileReader();

  // False (with *error) when the file cannot be used at all: unreadable, not a trace, unknown major
  // version, or a damaged header.
  bool open(const std::string& path, std::string* error);
  const Metadata& metadata() const { return meta_; }
  const Schema& schema() const { return schema_; }
  const std::string& path() const { return path_; }
  uint16_t version_major() const { return major_; }
  uint16_t version_minor() const { return minor_; }

  // Next intact chunk, false at the end of the file.
  bool next_chunk(Chunk* chunk);

  const std::vector<LossRecord>& losses() const { return losses_; }
  uint64_t bytes_lost() const;
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t chunks_read() const { return chunks_read_; }
  // Chunk sequence numbers absent between the first and the last seen (lost to damage).
  uint64_t chunks_missing() const;

 private:
  bool read_at(uint64_t off, void* dst, size_t n);
  bool valid_chunk_header(const ChunkHeader& h) const;
  uint64_t resync(uint64_t from);
  void note_loss(uint64_t offset, uint64_t bytes, std::string reason);

  FILE* f_ = nullptr;
  std::string path_;
  Metadata meta_;
  Schema schema_;
  uint16_t major_ = 0, minor_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t pos_ = 0;
  uint64_t chunks_read_ = 0;
  std::vector<uint32_t> seqs_;
  std::unordered_set<uint32_t> seen_seqs_;
  std::vector<LossRecord> losses_;
  std::vector<uint8_t> stored_;
  Decompressor decompressor_;
};

}  // namespace sigmatrace::format
