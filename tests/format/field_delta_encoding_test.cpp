// The field-delta chunk encoding (format 1.2): integer fields stored as changes since the previous
// event of their type. Values of every size and sign survive it exactly, across chunk boundaries,
// with and without the decoder's type filter; slot take-overs decode as the rule says; and the
// built-in types never share a slot.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <set>

#include "format/chunk_codec.h"
#include "format/field_deltas.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "format/varint.h"
#include "support/temp_dir.h"

using namespace sigmatrace::format;

namespace {

struct Expected {
  EventType type;
  uint64_t tsc;
  std::vector<uint64_t> words;
};

// Values that make the change from one event to the next wrap around, change sign, and span every
// varint length.
uint64_t awkward(uint64_t i) {
  switch (i % 5) {
    case 0: return 0;
    case 1: return ~uint64_t{0};
    case 2: return (i * 0x9e3779b97f4a7c15ull) >> (i % 64);
    case 3: return uint64_t{1} << 63;
    default: return i;
  }
}

std::vector<Expected> write_mixed_stream(const std::string& path, Codec codec) {
  TraceFileWriter w;
  EXPECT_TRUE(w.open(path, {{"host", "h"}}, codec, 4096));  // many chunks: each starts from zero
  std::vector<Expected> exp;
  uint64_t tsc = 1000;
  for (uint64_t i = 0; i < 3000; ++i) {
    uint64_t a = awkward(i), b = awkward(i * 7 + 3);
    int64_t result = i % 3 == 0 ? std::numeric_limits<int64_t>::min() : (i % 3 == 1 ? -static_cast<int64_t>(i) : std::numeric_limits<int64_t>::max());
    w.add(3, EventType::ibv_send_wr, tsc += 7, {uint64_t{0x1c0 + i % 4}, i, uint64_t{0}, a, uint64_t{1}, 0x7f0000000000 + 64 * i, b, uint64_t{2}, a ^ b});
    exp.push_back({EventType::ibv_send_wr, tsc, {0x1c0 + i % 4, i, 0, a, 1, 0x7f0000000000 + 64 * i, b, 2, a ^ b}});
    w.add(3, EventType::ibv_post_send, tsc += 1, {uint64_t{0x1c0}, uint64_t{1}, b, uint64_t{1}, result});
    exp.push_back({EventType::ibv_post_send, tsc, {0x1c0, 1, b, 1, static_cast<uint64_t>(result)}});
    if (i % 11 == 0) {  // a type with a bytes field in between: stored as it is, leaves the deltas alone
      w.add(3, EventType::thread_info, tsc += 1, {i, std::string_view("worker")});
      exp.push_back({EventType::thread_info, tsc, {i, 0}});
    }
  }
  EXPECT_TRUE(w.close());
  return exp;
}

std::vector<DecodedEvent> read_back(const std::string& path, const std::vector<bool>* wanted, uint64_t* chunks) {
  TraceFileReader r;
  std::string err;
  EXPECT_TRUE(r.open(path, &err)) << err;
  EXPECT_EQ(r.version_minor(), 2);
  std::vector<DecodedEvent> out;
  Chunk c;
  while (r.next_chunk(&c)) {
    ++*chunks;
    EXPECT_EQ(c.header.encoding, static_cast<uint8_t>(ChunkEncoding::field_deltas));
    ChunkEventDecoder d(c.header, c.payload.data(), c.payload.size(), &r.schema(), wanted);
    DecodedEvent ev;
    while (d.next(&ev)) {
      // Bytes fields point into this chunk's payload: checked here, while it is still there.
      for (int f = 0; f < ev.field_count; ++f) {
        if (ev.desc->fields[f].kind == FieldKind::bytes) {
          EXPECT_EQ(ev.bytes[f], "worker");
        }
      }
      out.push_back(ev);
    }
    EXPECT_FALSE(d.failed());
  }
  EXPECT_TRUE(r.losses().empty());
  return out;
}

}  // namespace

TEST(FieldDeltaEncoding, EveryValueSurvivesExactlyWithEveryCodecAndWithTheFilter) {
  for (Codec codec : {Codec::none, Codec::lz4, Codec::zstd}) {
    sigmatrace::test::TempDir dir;
    std::vector<Expected> exp = write_mixed_stream(dir / "t.sgt", codec);
    std::vector<bool> only_posts(600, false);
    only_posts[static_cast<size_t>(EventType::ibv_post_send)] = true;
    for (const std::vector<bool>* filter : std::initializer_list<const std::vector<bool>*>{nullptr, &only_posts}) {
      uint64_t chunks = 0;
      std::vector<DecodedEvent> got = read_back(dir / "t.sgt", filter, &chunks);
      EXPECT_GT(chunks, 20u) << codec_name(codec);
      ASSERT_EQ(got.size(), exp.size()) << codec_name(codec);
      for (size_t i = 0; i < exp.size(); ++i) {
        ASSERT_EQ(got[i].type, static_cast<uint16_t>(exp[i].type)) << i;
        ASSERT_EQ(got[i].tsc, exp[i].tsc) << i;
        bool decoded = !filter || exp[i].type == EventType::ibv_post_send;
        ASSERT_EQ(got[i].field_count, decoded ? static_cast<int>(exp[i].words.size()) : 0) << i;
        if (!decoded) continue;
        for (size_t f = 0; f < exp[i].words.size(); ++f) {
          if (got[i].desc->fields[f].kind != FieldKind::bytes) {
            ASSERT_EQ(got[i].values[f], exp[i].words[f]) << codec_name(codec) << " event " << i << " field " << f;
          }
        }
      }
    }
  }
}

TEST(FieldDeltaEncoding, RegularWorkRequestsTakeAboutAByteAField) {
  // The reason for the encoding: counters, addresses walking through a buffer and repeated QP
  // numbers change little from one WR to the next. Uncompressed, a 9-field WR with its type and
  // timestamp takes 11-14 bytes here (as plain varints: about 24).
  sigmatrace::test::TempDir dir;
  TraceFileWriter w;
  ASSERT_TRUE(w.open(dir / "t.sgt", {}, Codec::none));
  const uint64_t n = 100000;
  uint64_t tsc = 1'000'000;
  for (uint64_t i = 0; i < n; ++i)
    w.add(1, EventType::ibv_send_wr, tsc += 40 + i % 3,
          {uint64_t{0x1c0 + i % 2}, 0x55d0c0de0000 + 16 * i, uint64_t{0}, uint64_t{65536}, uint64_t{1},
           0x7f3a00000000 + 65536 * (i % 512), uint64_t{0x1234}, uint64_t{i % 64 == 63 ? 2u : 0u}, uint64_t{0}});
  ASSERT_TRUE(w.close());
  TraceFileReader r;
  std::string err;
  ASSERT_TRUE(r.open(dir / "t.sgt", &err)) << err;
  Chunk c;
  uint64_t payload = 0, events = 0;
  while (r.next_chunk(&c)) payload += c.header.raw_bytes, events += c.header.event_count;
  ASSERT_EQ(events, n);
  double per_event = static_cast<double>(payload) / static_cast<double>(n);
  EXPECT_GE(per_event, 11.0);
  EXPECT_LE(per_event, 14.0);
}

TEST(FieldDeltaEncoding, ATypeThatTakesASlotOverStartsFromZero) {
  // Two types of a newer schema that share a slot (ids 256 apart), hand-encoded as the format
  // says: A {5, 6}; B takes the slot: {7, 8}; A takes it back, from zero: {9, 10}; A again: the
  // changes (-1, 0) from {9, 10}.
  Schema schema = Schema::builtin();
  const uint16_t a = 1007, b = a + FieldDeltaTable::kSlots;
  schema.types.push_back({a, "future_a", {{FieldKind::u64, "x"}, {FieldKind::i64, "y"}}});
  schema.types.push_back({b, "future_b", {{FieldKind::u64, "x"}, {FieldKind::u64, "y"}}});
  std::vector<uint8_t> payload;
  uint8_t buf[16];
  auto put = [&](uint64_t v) { payload.insert(payload.end(), buf, varint_put(buf, v)); };
  auto event = [&](uint16_t type, int64_t dx, int64_t dy) {
    put(type), put(zigzag_encode(1)), put(zigzag_encode(dx)), put(zigzag_encode(dy));
  };
  event(a, 5, 6), event(b, 7, 8), event(a, 9, 10), event(a, -1, 0);
  const std::vector<std::pair<uint64_t, uint64_t>> expected_a = {{5, 6}, {9, 10}, {8, 10}};
  std::vector<bool> only_a(b + 1, false);
  only_a[a] = true;
  for (const std::vector<bool>* filter : std::initializer_list<const std::vector<bool>*>{nullptr, &only_a}) {
    ChunkEventDecoder d(payload.data(), payload.size(), 0, ChunkEncoding::field_deltas, &schema, filter);
    DecodedEvent ev;
    size_t next_a = 0;
    while (d.next(&ev)) {
      if (ev.type == b) {
        if (!filter) {
          EXPECT_EQ(std::make_pair(ev.values[0], ev.values[1]), std::make_pair(uint64_t{7}, uint64_t{8}));
        }
        continue;
      }
      ASSERT_LT(next_a, expected_a.size());
      EXPECT_EQ(std::make_pair(ev.values[0], ev.values[1]), expected_a[next_a]) << "A event " << next_a;
      ++next_a;
    }
    EXPECT_FALSE(d.failed());
    EXPECT_EQ(next_a, expected_a.size());
  }
}

TEST(FieldDeltaEncoding, AnUnknownEncodingFailsInsteadOfInventingValues) {
  uint8_t payload[] = {7, 2, 1, 1};
  Schema schema = Schema::builtin();
  ChunkEventDecoder d(payload, sizeof payload, 0, static_cast<ChunkEncoding>(kLastChunkEncoding + 1), &schema);
  DecodedEvent ev;
  EXPECT_FALSE(d.next(&ev));
  EXPECT_TRUE(d.failed());
}

TEST(FieldDeltaEncoding, NoTwoBuiltInIntegerTypesShareASlot) {
  int count = 0;
  const EventSpec* specs = builtin_event_specs(&count);
  std::set<uint32_t> slots;
  for (int i = 0; i < count; ++i) {
    if (specs[i].has_bytes) continue;
    EXPECT_TRUE(slots.insert(specs[i].id % FieldDeltaTable::kSlots).second)
        << specs[i].name << " shares its delta slot with another built-in type: its events would compress worse";
  }
}
