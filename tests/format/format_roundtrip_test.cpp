// Format round trips: raw records -> compact chunk -> compressed file -> reader -> the same events.
#include <gtest/gtest.h>

#include <cstring>

#include "format/chunk_codec.h"
#include "format/chunk_sealer.h"
#include "format/raw_event.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/varint.h"
#include "support/temp_dir.h"

using namespace sigmatrace::format;

namespace {

std::vector<DecodedEvent> read_all(const std::string& path, std::vector<std::string>* strings = nullptr,
                                   std::vector<uint32_t>* tids = nullptr) {
  TraceFileReader r;
  std::string err;
  EXPECT_TRUE(r.open(path, &err)) << err;
  std::vector<DecodedEvent> out;
  Chunk c;
  while (r.next_chunk(&c)) {
    ChunkEventDecoder d(c.header, c.payload.data(), c.payload.size(), &r.schema());
    DecodedEvent ev;
    while (d.next(&ev)) {
      out.push_back(ev);
      if (tids) tids->push_back(c.header.tid);
      if (strings)
        for (int f = 0; f < ev.field_count; ++f)
          if (!ev.bytes[f].empty()) strings->emplace_back(ev.bytes[f]);
    }
    EXPECT_FALSE(d.failed());
  }
  EXPECT_TRUE(r.losses().empty());
  return out;
}

}  // namespace

TEST(FormatRoundTrip, EveryFieldKindSurvivesEveryCodec) {
  for (Codec codec : {Codec::none, Codec::zstd, Codec::lz4}) {
    sigmatrace::test::TempDir dir;
    TraceFileWriter w;
    ASSERT_TRUE(w.open(dir / "t.sgt", {{"host", "node1"}, {"rank", "3"}}, codec, 4096));
    for (uint64_t i = 0; i < 5000; ++i) w.add(7, EventType::user_mark, 1000 + i * 13, {i, ~i});
    w.add(0, EventType::rank_update, 2000, {int64_t{-1}, int64_t{16}, std::string_view("MPI_Comm_rank")});
    w.add(0, EventType::thread_info, 2001, {uint64_t{7}, std::string_view("")});
    // Integer fields only, a signed one among them (the encoder's fast path zigzags it).
    w.add(7, EventType::ibv_post_send, 2002, {uint64_t{0x99}, uint64_t{3}, ~uint64_t{0} >> 1, uint64_t{1}, int64_t{-12}});
    ASSERT_TRUE(w.close());
    EXPECT_GT(w.chunks_written(), 5u);  // 4 KiB chunks: the marks span many

    std::vector<std::string> strings;
    std::vector<uint32_t> tids;
    std::vector<DecodedEvent> evs = read_all(dir / "t.sgt", &strings, &tids);
    ASSERT_EQ(evs.size(), 5003u) << codec_name(codec);
    uint64_t marks = 0;
    for (size_t k = 0; k < evs.size(); ++k) {
      const DecodedEvent& e = evs[k];
      if (e.type == static_cast<uint16_t>(EventType::user_mark)) {
        EXPECT_EQ(tids[k], 7u);
        EXPECT_EQ(e.values[0], marks);
        EXPECT_EQ(e.values[1], ~marks);
        EXPECT_EQ(e.tsc, 1000 + marks * 13);
        ++marks;
      } else if (e.type == static_cast<uint16_t>(EventType::rank_update)) {
        EXPECT_EQ(e.as_i64(0), -1);
        EXPECT_EQ(e.as_i64(1), 16);
      } else if (e.type == static_cast<uint16_t>(EventType::ibv_post_send)) {
        EXPECT_EQ(e.values[0], 0x99u);
        EXPECT_EQ(e.values[2], ~uint64_t{0} >> 1);
        EXPECT_EQ(e.as_i64(4), -12);
        EXPECT_EQ(e.tsc, 2002u);
      }
    }
    EXPECT_EQ(marks, 5000u);
    // Byte fields point into the chunk while it is read: read_all() copied them out.
    EXPECT_EQ(strings, std::vector<std::string>{"MPI_Comm_rank"});
  }
}

TEST(FormatRoundTrip, HeaderCarriesMetadataAndSchema) {
  sigmatrace::test::TempDir dir;
  TraceFileWriter w;
  ASSERT_TRUE(w.open(dir / "t.sgt", {{"host", "h"}, {"cmdline", std::string("a\0b", 3)}}));
  ASSERT_TRUE(w.close());
  TraceFileReader r;
  std::string err;
  ASSERT_TRUE(r.open(dir / "t.sgt", &err)) << err;
  ASSERT_NE(find_meta(r.metadata(), "host"), nullptr);
  EXPECT_EQ(*find_meta(r.metadata(), "host"), "h");
  EXPECT_EQ(find_meta(r.metadata(), "cmdline")->size(), 3u);
  const TypeDesc* t = r.schema().lookup("ibv_qp_modify");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->field_index("dest_qp_num"), 4);
  EXPECT_EQ(r.version_major(), kFormatMajor);
}

TEST(FormatRoundTrip, ReaderDecodesTypesItDoesNotKnowFromTheFileSchema) {
  // A newer profiler wrote type 999, which this build's schema lacks: the file's own schema still
  // lets the reader decode (and so skip) it, and the events around it survive.
  Schema schema = Schema::builtin();
  schema.types.push_back({999, "future_event", {{FieldKind::u64, "a"}, {FieldKind::bytes, "b"}}});
  std::vector<uint8_t> compact;
  uint8_t buf[64];
  auto put = [&](uint64_t v) { compact.insert(compact.end(), buf, varint_put(buf, v)); };
  put(999), put(zigzag_encode(5)), put(42), put(3), compact.insert(compact.end(), {'x', 'y', 'z'});
  put(static_cast<uint64_t>(EventType::user_mark)), put(zigzag_encode(1)), put(8), put(9);
  ChunkEventDecoder d(compact.data(), compact.size(), 100, ChunkEncoding::varints, &schema);
  DecodedEvent ev;
  ASSERT_TRUE(d.next(&ev));
  EXPECT_EQ(ev.desc->name, "future_event");
  EXPECT_EQ(ev.values[0], 42u);
  EXPECT_EQ(ev.bytes[1], "xyz");
  EXPECT_EQ(ev.tsc, 105u);
  ASSERT_TRUE(d.next(&ev));
  EXPECT_EQ(ev.type, static_cast<uint16_t>(EventType::user_mark));
  EXPECT_EQ(ev.tsc, 106u);
  EXPECT_FALSE(d.next(&ev));
  EXPECT_FALSE(d.failed());
}

TEST(FormatRoundTrip, EncoderSkipsAndCountsRecordsThatDoNotMatchTheSchema) {
  std::vector<uint8_t> raw;
  append_raw_event(&raw, static_cast<uint16_t>(EventType::user_mark), 10, {uint64_t{1}, uint64_t{2}});
  append_raw_event(&raw, static_cast<uint16_t>(EventType::user_mark), 11, {uint64_t{1}});  // one field short
  append_raw_event(&raw, 4242, 12, {uint64_t{1}});                                          // unknown type
  append_raw_event(&raw, static_cast<uint16_t>(EventType::user_mark), 13, {uint64_t{3}, uint64_t{4}});
  std::vector<uint8_t> out(compact_bound(raw.size()));
  EncodeResult r = encode_raw_events(raw.data(), raw.size(), 10, out.data(), out.size());
  EXPECT_EQ(r.events, 2u);
  EXPECT_EQ(r.malformed, 2u);
}

TEST(FormatRoundTrip, TypicalRdmaEventsTakeWellUnder16BytesOnDisk) {
  // A Simple-mode verbs stream: post_send calls on a few QPs about 300 ns apart.
  sigmatrace::test::TempDir dir;
  TraceFileWriter w;
  ASSERT_TRUE(w.open(dir / "t.sgt", {}, Codec::zstd));
  const uint64_t n = 200000;
  uint64_t tsc = 1'000'000;
  for (uint64_t i = 0; i < n; ++i) {
    tsc += 600 + (i * 7919) % 97;
    w.add(1, EventType::ibv_post_send, tsc, {uint64_t{0x1c0 + i % 4}, uint64_t{1}, uint64_t{65536}, uint64_t{1}, int64_t{0}});
  }
  ASSERT_TRUE(w.close());
  FILE* f = fopen((dir / "t.sgt").c_str(), "rb");
  fseek(f, 0, SEEK_END);
  double per_event = static_cast<double>(ftell(f)) / n;
  fclose(f);
  EXPECT_LT(per_event, 8.0);
  RecordProperty("bytes_per_event", std::to_string(per_event));
}
