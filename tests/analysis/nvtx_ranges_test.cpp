// The NVTX range rebuild of the first pass (NvtxCollector, ProcessRanges), fed events as the
// nvtx provider records them: start/end ranges ending on another thread, pops without a push,
// ranges never ended, payload decoding (scalars, enums, a character array, a cut payload), and the
// innermost-range lookup with its borrowing rule.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "analysis/nvtx_ranges.h"
#include "format/event_types.h"

namespace {

using sigmatrace::analysis::NvtxCollector;
using sigmatrace::analysis::ProcessRanges;
using sigmatrace::analysis::RangeCounters;
using sigmatrace::analysis::RangeRow;
using sigmatrace::format::EventType;
using sigmatrace::format::NvtxKind;

// An event of type t at tsc: words, then (if given) its bytes field at position bytes_at.
struct Ev {
  sigmatrace::format::DecodedEvent ev;
  std::string text;
  Ev(EventType t, uint64_t tsc, std::initializer_list<uint64_t> words, std::string bytes = "", int bytes_at = -1) : text(std::move(bytes)) {
    ev.type = static_cast<uint16_t>(t);
    ev.tsc = tsc;
    int i = 0;
    for (uint64_t w : words) ev.values[i++] = w;
    if (bytes_at >= 0) ev.bytes[bytes_at] = text, i = std::max(i, bytes_at + 1);
    ev.field_count = i;
  }
};

uint64_t k(NvtxKind kind) { return static_cast<uint64_t>(kind); }

void begin(NvtxCollector& c, uint32_t tid, uint64_t tsc, NvtxKind kind, uint64_t id, const std::string& message, uint64_t domain = 0,
           uint64_t handle = 0) {
  Ev e(EventType::nvtx_begin, tsc, {domain, k(kind), id, 0, 0, 0, 0, handle}, message, 8);
  c.on_event(tid, e.ev);
}
void end(NvtxCollector& c, uint32_t tid, uint64_t tsc, NvtxKind kind, uint64_t id, uint64_t domain = 0) {
  Ev e(EventType::nvtx_end, tsc, {domain, k(kind), id});
  c.on_event(tid, e.ev);
}

TEST(NvtxCollector, PairsRangesAcrossThreadsAndCountsWhatDoesNotPair) {
  NvtxCollector c;
  Ev d(EventType::nvtx_domain, 1, {7}, "NCCL", 1);
  c.on_event(1, d.ev);
  Ev s(EventType::nvtx_string, 2, {7, 42}, "ncclAllReduce", 2);
  c.on_event(1, s.ev);
  begin(c, 1, 10, NvtxKind::start, 5, "epoch");         // ended on thread 2
  begin(c, 1, 20, NvtxKind::push, 0, "", 7, 42);        // a registered string in domain 7
  begin(c, 1, 25, NvtxKind::mark, 0, "here");
  end(c, 1, 30, NvtxKind::push, 0, 7);
  end(c, 1, 31, NvtxKind::push, 0, 7);                  // a pop without a push
  begin(c, 2, 40, NvtxKind::push, 0, "open");           // never popped
  end(c, 2, 50, NvtxKind::start, 5);
  end(c, 2, 51, NvtxKind::start, 99);                   // an end of no start
  RangeCounters n;
  std::vector<RangeRow> rows = c.finish(100, &n);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].path, "epoch");
  EXPECT_EQ(rows[0].end_tsc, 50u);
  EXPECT_EQ(rows[1].name, "ncclAllReduce");
  EXPECT_EQ(rows[1].domain, "NCCL");
  EXPECT_EQ(rows[1].path, "epoch / ncclAllReduce");
  EXPECT_EQ(rows[1].end_tsc, 30u);
  EXPECT_EQ(rows[2].path, "epoch / ncclAllReduce / here");
  EXPECT_FALSE(rows[3].ended);
  EXPECT_EQ(rows[3].end_tsc, 100u);
  EXPECT_EQ(n.ranges, 3u);
  EXPECT_EQ(n.marks, 1u);
  EXPECT_EQ(n.unended, 1u);
  EXPECT_EQ(n.unmatched_ends, 2u);
}

TEST(NvtxCollector, DecodesPayloadsByTheirSchema) {
  NvtxCollector c;
  Ev e(EventType::nvtx_schema, 1, {0, 1000, 2, 4}, "ncclSum\t0\nncclMax\t2\n", 4);
  c.on_event(1, e.ev);
  Ev sc(EventType::nvtx_schema, 2, {0, 2000, 1, 32},
        "count\t18\t0\t0\t1\nop\t1000\t0\t8\t1\nscale\t20\t0\t16\t1\ntag\t1\t0\t24\t8\nhidden\t18\t512\t0\t1\n", 4);
  c.on_event(1, sc.ev);
  struct {
    uint64_t count;
    int32_t op, pad;
    double scale;
    char tag[8];
  } p{1048576, 2, 0, 0.5, "ring"};
  begin(c, 1, 10, NvtxKind::push, 0, "ncclAllReduce");
  Ev pl(EventType::nvtx_payload, 10, {2000, sizeof p}, std::string(reinterpret_cast<const char*>(&p), sizeof p), 2);
  c.on_event(1, pl.ev);
  end(c, 1, 20, NvtxKind::push, 0);
  begin(c, 1, 30, NvtxKind::push, 0, "cut");
  Ev cut(EventType::nvtx_payload, 30, {2000, sizeof p}, std::string(reinterpret_cast<const char*>(&p), 12), 2);
  c.on_event(1, cut.ev);
  end(c, 1, 40, NvtxKind::push, 0);
  begin(c, 1, 50, NvtxKind::push, 0, "unknown schema");
  Ev unknown(EventType::nvtx_payload, 50, {77, 4}, "abcd", 2);
  c.on_event(1, unknown.ev);
  end(c, 1, 60, NvtxKind::push, 0);
  RangeCounters n;
  std::vector<RangeRow> rows = c.finish(100, &n);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].payload, "count=1048576 op=ncclMax scale=0.500000 tag=ring");
  EXPECT_EQ(rows[1].payload, "count=1048576 op=ncclMax");  // the entries past the bytes kept are left out, and counted
  EXPECT_EQ(rows[2].payload, "schema=77 bytes=4");
  EXPECT_EQ(n.undecoded_payloads, 2u);
}

RangeRow row(int64_t thread, int64_t start, int64_t end, int64_t parent = -1, NvtxKind kind = NvtxKind::push) {
  RangeRow r;
  r.thread_id = thread, r.start_ns = start, r.end_ns = end, r.parent = parent, r.kind = k(kind);
  return r;
}

TEST(ProcessRanges, InnermostOpenRangeOfTheThreadOrOfTheOnlyOtherThreadWithOne) {
  ProcessRanges p;
  p.set({row(0, 0, 100), row(0, 10, 20, 0), row(0, 15, 15, 1, NvtxKind::mark), row(1, 200, 300), row(2, 250, 260)});
  EXPECT_EQ(p.at(0, 12), 1);   // the inner one
  EXPECT_EQ(p.at(0, 15), 1);   // a mark is no range
  EXPECT_EQ(p.at(0, 50), 0);   // the inner one ended: the outer
  EXPECT_EQ(p.at(0, 150), -1);
  EXPECT_EQ(p.at(5, 50), 0);   // thread 5 has none: thread 0 is the only one with a range open
  EXPECT_EQ(p.at(0, 220), 3);  // likewise from thread 1
  EXPECT_EQ(p.at(5, 255), -1); // threads 1 and 2 both have one open: nobody's
  EXPECT_EQ(p.at(2, 255), 4);  // its own comes first
}

}  // namespace
