// The reader on damaged files: it must recover every intact chunk, report exactly what was lost,
// and never crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "format/crc32c.h"
#include "format/file_layout.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "support/temp_dir.h"

using namespace sigmatrace::format;

namespace {

constexpr uint64_t kMarksPerChunk = 100;  // 100 marks of 32 raw bytes fill a 3200-byte chunk
constexpr uint64_t kChunks = 20;

std::vector<uint8_t> make_trace(const std::string& path) {
  TraceFileWriter w;
  EXPECT_TRUE(w.open(path, {{"host", "h"}}, Codec::zstd, kMarksPerChunk * 32));
  for (uint64_t i = 0; i < kMarksPerChunk * kChunks; ++i) w.add(1, EventType::user_mark, 100 + i, {i, i});
  EXPECT_TRUE(w.close());
  EXPECT_EQ(w.chunks_written(), kChunks);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct ReadResult {
  uint64_t chunks = 0, events = 0;
  std::vector<LossRecord> losses;
  uint64_t missing = 0;
  bool opened = false;
  std::string error;
};

ReadResult read_back(const std::string& path) {
  ReadResult rr;
  TraceFileReader r;
  rr.opened = r.open(path, &rr.error);
  if (!rr.opened) return rr;
  Chunk c;
  while (r.next_chunk(&c)) {
    ++rr.chunks;
    ChunkEventDecoder d(c.header, c.payload.data(), c.payload.size(), &r.schema());
    DecodedEvent e;
    while (d.next(&e)) ++rr.events;
  }
  rr.losses = r.losses();
  rr.missing = r.chunks_missing();
  return rr;
}

// Offsets of every chunk header in the file.
std::vector<size_t> chunk_offsets(const std::vector<uint8_t>& f) {
  std::vector<size_t> offs;
  FileHeader h;
  std::memcpy(&h, f.data(), sizeof h);
  size_t pos = sizeof h + h.body_bytes;
  while (pos + sizeof(ChunkHeader) <= f.size()) {
    ChunkHeader c;
    std::memcpy(&c, f.data() + pos, sizeof c);
    offs.push_back(pos);
    pos += sizeof c + c.stored_bytes;
  }
  return offs;
}

// Exactly chunk k was lost, as one loss covering its bytes; every other chunk read whole.
void expect_only_chunk_lost(const ReadResult& r, const std::vector<size_t>& offs, size_t k) {
  EXPECT_EQ(r.chunks, kChunks - 1);
  EXPECT_EQ(r.events, (kChunks - 1) * kMarksPerChunk);
  ASSERT_EQ(r.losses.size(), 1u);
  EXPECT_EQ(r.losses[0].offset, offs[k]);
  EXPECT_EQ(r.losses[0].bytes, offs[k + 1] - offs[k]);
}

}  // namespace

TEST(TraceReaderDamage, IntactFileReadsCompletely) {
  sigmatrace::test::TempDir dir;
  make_trace(dir / "t.sgt");
  ReadResult r = read_back(dir / "t.sgt");
  EXPECT_EQ(r.chunks, kChunks);
  EXPECT_EQ(r.events, kChunks * kMarksPerChunk);
  EXPECT_TRUE(r.losses.empty());
}

TEST(TraceReaderDamage, TruncatedFileKeepsEveryWholeChunkAndReportsTheTail) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  std::vector<size_t> offs = chunk_offsets(f);
  size_t cut = offs[15] + 30;  // inside chunk 15's header
  f.resize(cut);
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  EXPECT_EQ(r.chunks, 15u);
  EXPECT_EQ(r.events, 15 * kMarksPerChunk);
  ASSERT_EQ(r.losses.size(), 1u);
  EXPECT_EQ(r.losses[0].offset, offs[15]);
  EXPECT_EQ(r.losses[0].bytes, 30u);
}

TEST(TraceReaderDamage, CorruptPayloadLosesExactlyThatChunk) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  std::vector<size_t> offs = chunk_offsets(f);
  f[offs[7] + sizeof(ChunkHeader) + 5] ^= 0xff;
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  expect_only_chunk_lost(r, offs, 7);
  EXPECT_EQ(r.missing, 1u);
}

TEST(TraceReaderDamage, ChunkOfAnUnknownEncodingIsReportedNotMisread) {
  // A sound chunk from a newer writer whose payload encoding this build cannot decode.
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  std::vector<size_t> offs = chunk_offsets(f);
  ChunkHeader h;
  std::memcpy(&h, f.data() + offs[5], sizeof h);
  h.encoding = kLastChunkEncoding + 1;
  h.header_crc = crc32c(&h, offsetof(ChunkHeader, header_crc));
  std::memcpy(f.data() + offs[5], &h, sizeof h);
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  expect_only_chunk_lost(r, offs, 5);
  ASSERT_EQ(r.losses.size(), 1u);
  EXPECT_NE(r.losses[0].reason.find("encoding this build does not know (2"), std::string::npos) << r.losses[0].reason;
}

TEST(TraceReaderDamage, CorruptChunkHeaderIsSkippedByResynchronising) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  std::vector<size_t> offs = chunk_offsets(f);
  f[offs[3] + 12] ^= 0x10;  // the header's CRC no longer matches
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  EXPECT_EQ(r.chunks, kChunks - 1);
  ASSERT_EQ(r.losses.size(), 1u);
  EXPECT_EQ(r.losses[0].offset, offs[3]);
  EXPECT_EQ(r.losses[0].bytes, offs[4] - offs[3]);
}

TEST(TraceReaderDamage, GarbageBetweenChunksIsSkipped) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  std::vector<size_t> offs = chunk_offsets(f);
  std::vector<uint8_t> garbage(777, 0x53);  // 'S': starts like the chunk magic, never validates
  f.insert(f.begin() + static_cast<long>(offs[10]), garbage.begin(), garbage.end());
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  EXPECT_EQ(r.chunks, kChunks);
  ASSERT_EQ(r.losses.size(), 1u);
  EXPECT_EQ(r.losses[0].bytes, 777u);
}

TEST(TraceReaderDamage, NotATraceIsRejectedWithAReason) {
  sigmatrace::test::TempDir dir;
  write_bytes(dir / "x.sgt", std::vector<uint8_t>(100, 'A'));
  ReadResult r = read_back(dir / "x.sgt");
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("bad magic"), std::string::npos);
  write_bytes(dir / "y.sgt", std::vector<uint8_t>(3, 'S'));
  r = read_back(dir / "y.sgt");
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("shorter than a file header"), std::string::npos);
  r = read_back(dir / "missing.sgt");
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("cannot open"), std::string::npos);
}

TEST(TraceReaderDamage, NewerMajorVersionIsRefused) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> f = make_trace(dir / "t.sgt");
  FileHeader h;
  std::memcpy(&h, f.data(), sizeof h);
  h.version_major = kFormatMajor + 1;
  h.header_crc = sigmatrace::format::crc32c(&h, offsetof(FileHeader, header_crc));
  std::memcpy(f.data(), &h, sizeof h);
  write_bytes(dir / "t.sgt", f);
  ReadResult r = read_back(dir / "t.sgt");
  EXPECT_FALSE(r.opened);
  EXPECT_NE(r.error.find("unsupported format version"), std::string::npos);
}

TEST(TraceReaderDamage, RandomCorruptionNeverCrashesAndNeverInventsEvents) {
  sigmatrace::test::TempDir dir;
  std::vector<uint8_t> orig = make_trace(dir / "t.sgt");
  uint64_t seed = 12345;
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> f = orig;
    for (int k = 0; k < 1 + round % 8; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      f[64 + (seed >> 33) % (f.size() - 64)] ^= static_cast<uint8_t>(1 + (seed >> 20) % 255);
    }
    write_bytes(dir / "t.sgt", f);
    ReadResult r = read_back(dir / "t.sgt");
    if (r.opened) {
      EXPECT_LE(r.events, kChunks * kMarksPerChunk);
    }
  }
}
