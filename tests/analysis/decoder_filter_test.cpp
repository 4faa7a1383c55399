// The decoder's type filter, which the analysis' first pass relies on: skipped events keep their
// type and timestamp and the events after them decode exactly as without the filter, for values
// of every varint length.
#include <gtest/gtest.h>

#include "format/chunk_codec.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

using format::EventType;

TEST(DecoderFilter, SkippedEventsLeaveTheOthersIntact) {
  TempDir dir;
  std::string path = dir / "f.sgt";
  {
    format::TraceFileWriter w;
    ASSERT_TRUE(w.open(path, {{"host", "h"}}, format::Codec::zstd, 1 << 20));
    uint64_t tsc = 1000;
    for (uint64_t i = 0; i < 500; ++i) {
      uint64_t big = (i * 0x9e3779b97f4a7c15ull) >> (i % 64);  // 1 to 10 byte varints
      w.add(7, EventType::ibv_send_wr, tsc += 3, {big, i, uint64_t{2}, big >> 3, uint64_t{1}, big, i, uint64_t{2}, big});
      if (i % 7 == 0) w.add(7, EventType::ibv_qp_modify, tsc += 5, {i, big, uint64_t{3}, uint64_t{1}, big, i, big, i, i, i, big});
      w.add(7, EventType::ibv_completion, tsc += 1, {i, big, i, uint64_t{0}, uint64_t{1}, big, i, uint64_t{0}, i, i});
    }
    ASSERT_TRUE(w.close());
  }
  format::TraceFileReader r;
  std::string err;
  ASSERT_TRUE(r.open(path, &err)) << err;
  format::Chunk chunk;
  ASSERT_TRUE(r.next_chunk(&chunk));
  std::vector<bool> wanted(200, false);
  wanted[static_cast<size_t>(EventType::ibv_qp_modify)] = true;
  format::ChunkEventDecoder all(chunk.header, chunk.payload.data(), chunk.payload.size(), &r.schema());
  format::ChunkEventDecoder some(chunk.header, chunk.payload.data(), chunk.payload.size(), &r.schema(), &wanted);
  format::DecodedEvent a, b;
  size_t n = 0, modifies = 0;
  while (all.next(&a)) {
    ASSERT_TRUE(some.next(&b)) << "event " << n;
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.tsc, b.tsc);
    if (a.type == static_cast<uint16_t>(EventType::ibv_qp_modify)) {
      ++modifies;
      ASSERT_EQ(b.field_count, 11);
      for (int f = 0; f < 11; ++f) EXPECT_EQ(a.values[f], b.values[f]);
    } else {
      EXPECT_EQ(b.field_count, 0);
    }
    ++n;
  }
  EXPECT_FALSE(some.next(&b));
  EXPECT_FALSE(all.failed());
  EXPECT_FALSE(some.failed());
  EXPECT_EQ(n, 500u * 2 + 72);
  EXPECT_EQ(modifies, 72u);
}

}  // namespace
}  // namespace sigmatrace::test
