// Recovery rules: a chunk is accepted only if its header CRC, bounds and payload CRC all check and
// its payload decompresses to the announced size; anything else is skipped and reported.
#include "format/trace_reader.h"

#include <algorithm>
#include <cstring>

#include "format/crc32c.h"

namespace sigmatrace::format {

TraceFileReader::~TraceFileReader() {
  if (f_) fclose(f_);
}

bool TraceFileReader::read_at(uint64_t off, void* dst, size_t n) {
  if (off + n > file_bytes_) return false;
  if (fseeko(f_, static_cast<off_t>(off), SEEK_SET) != 0) return false;
  return fread(dst, 1, n, f_) == n;
}

bool TraceFileReader::open(const std::string& path, std::string* error) {
  path_ = path;
  f_ = fopen(path.c_str(), "rb");
  if (!f_) {
    *error = path + ": cannot open: " + strerror(errno);
    return false;
  }
  fseeko(f_, 0, SEEK_END);
  file_bytes_ = static_cast<uint64_t>(ftello(f_));
  FileHeader h{};
  if (!read_at(0, &h, sizeof h)) {
    *error = path + ": not a sigmatrace trace (shorter than a file header)";
    return false;
  }
  if (std::memcmp(h.magic, kFileMagic, sizeof h.magic) != 0) {
    *error = path + ": not a sigmatrace trace (bad magic)";
    return false;
  }
  if (crc32c(&h, offsetof(FileHeader, header_crc)) != h.header_crc) {
    *error = path + ": damaged file header (checksum mismatch)";
    return false;
  }
  if (h.version_major != kFormatMajor) {
    *error = path + ": unsupported format version " + std::to_string(h.version_major) + "." +
             std::to_string(h.version_minor) + " (this reader understands " + std::to_string(kFormatMajor) + ".x)";
    return false;
  }
  major_ = h.version_major;
  minor_ = h.version_minor;
  std::vector<uint8_t> body(h.body_bytes);
  if (!read_at(sizeof h, body.data(), body.size()) || crc32c(body.data(), body.size()) != h.body_crc) {
    *error = path + ": damaged file header body (truncated or checksum mismatch)";
    return false;
  }
  std::string e;
  if (!decode_header_body(body.data(), body.size(), &meta_, &schema_, &e)) {
    *error = path + ": " + e;
    return false;
  }
  pos_ = sizeof h + h.body_bytes;
  return true;
}

bool TraceFileReader::valid_chunk_header(const ChunkHeader& h) const {
  return h.magic == kChunkMagic && crc32c(&h, offsetof(ChunkHeader, header_crc)) == h.header_crc &&
         h.raw_bytes <= kMaxChunkRawBytes && h.stored_bytes <= kMaxChunkRawBytes + (kMaxChunkRawBytes >> 4) &&
         h.codec <= static_cast<uint8_t>(Codec::lz4);
}

void TraceFileReader::note_loss(uint64_t offset, uint64_t bytes, std::string reason) {
  losses_.push_back({offset, bytes, std::move(reason)});
}

// Scans forward from `from` for the next position holding a valid chunk header; returns file_bytes_
// when there is none.
uint64_t TraceFileReader::resync(uint64_t from) {
  constexpr size_t kWindow = 1 << 20;
  std::vector<uint8_t> buf(kWindow + sizeof(ChunkHeader));
  for (uint64_t base = from; base + sizeof(ChunkHeader) <= file_bytes_; base += kWindow) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), file_bytes_ - base));
    if (!read_at(base, buf.data(), n)) break;
    for (size_t i = 0; i + sizeof(ChunkHeader) <= n && i < kWindow; ++i) {
      if (buf[i] != (kChunkMagic & 0xff)) continue;
      ChunkHeader h;
      std::memcpy(&h, buf.data() + i, sizeof h);
      if (valid_chunk_header(h)) return base + i;
    }
  }
  return file_bytes_;
}

bool TraceFileReader::next_chunk(Chunk* chunk) {
  while (pos_ < file_bytes_) {
    ChunkHeader h{};
    if (pos_ + sizeof h > file_bytes_) {
      note_loss(pos_, file_bytes_ - pos_, "truncated chunk header at end of file");
      pos_ = file_bytes_;
      return false;
    }
    read_at(pos_, &h, sizeof h);
    if (std::memcmp(&h, kFileMagic, sizeof kFileMagic) == 0) {
      // A whole second trace (files concatenated): its chunks would repeat or mix in another
      // process's events, so the rest is reported, not read.
      note_loss(pos_, file_bytes_ - pos_, "another trace file begins here (files concatenated?): not read");
      pos_ = file_bytes_;
      return false;
    }
    if (!valid_chunk_header(h)) {
      uint64_t next = resync(pos_ + 1);
      note_loss(pos_, next - pos_, "corrupt chunk header");
      pos_ = next;
      continue;
    }
    uint64_t payload_at = pos_ + sizeof h;
    if (payload_at + h.stored_bytes > file_bytes_) {
      note_loss(pos_, file_bytes_ - pos_, "truncated chunk (file ends inside it)");
      pos_ = file_bytes_;
      return false;
    }
    stored_.resize(h.stored_bytes);
    read_at(payload_at, stored_.data(), h.stored_bytes);
    if (crc32c(stored_.data(), stored_.size()) != h.payload_crc) {
      // The header is sound, so its length can be trusted: skip exactly this chunk.
      note_loss(pos_, sizeof h + h.stored_bytes, "chunk payload checksum mismatch (" + std::to_string(h.event_count) + " events)");
      pos_ = payload_at + h.stored_bytes;
      continue;
    }
    if (h.encoding > kLastChunkEncoding) {
      note_loss(pos_, sizeof h + h.stored_bytes, "chunk in an encoding this build does not know (" + std::to_string(h.encoding) +
                ", written by a newer sigmatrace?; " + std::to_string(h.event_count) + " events)");
      pos_ = payload_at + h.stored_bytes;
      continue;
    }
    chunk->payload.resize(h.raw_bytes);
    if (!decompressor_.run(static_cast<Codec>(h.codec), stored_.data(), stored_.size(), chunk->payload.data(), h.raw_bytes)) {
      note_loss(pos_, sizeof h + h.stored_bytes, "chunk does not decompress (" + std::to_string(h.event_count) + " events)");
      pos_ = payload_at + h.stored_bytes;
      continue;
    }
    if (!seen_seqs_.insert(h.seq).second) {  // a sound chunk written twice (copied data)
      note_loss(pos_, sizeof h + h.stored_bytes, "repeats chunk " + std::to_string(h.seq) + " (" +
                std::to_string(h.event_count) + " events, not counted twice)");
      pos_ = payload_at + h.stored_bytes;
      continue;
    }
    chunk->header = h;
    chunk->offset = pos_;
    pos_ = payload_at + h.stored_bytes;
    ++chunks_read_;
    seqs_.push_back(h.seq);
    return true;
  }
  return false;
}

uint64_t TraceFileReader::bytes_lost() const {
  uint64_t n = 0;
  for (const LossRecord& l : losses_) n += l.bytes;
  return n;
}

uint64_t TraceFileReader::chunks_missing() const {
  if (seqs_.empty()) return 0;
  std::vector<uint32_t> s = seqs_;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return static_cast<uint64_t>(s.back() - s.front() + 1) - s.size();
}

}  // namespace sigmatrace::format
