// The recorder inside a started runtime (this test process is the traced program): how the
// per-thread chunks and the shared pool behave at their edges.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "format/event_types.h"
#include "profiler/lifecycle/lifecycle.h"
#include "profiler/runtime/recorder.h"
#include "profiler/runtime/runtime.h"
#include "support/temp_dir.h"

using namespace sigmatrace::profiler;
using sigmatrace::format::EventType;

namespace {

// Waits until the writer has given every full chunk back to the pool.
uint32_t settled_free_chunks() {
  uint32_t prev = ~0u;
  for (int i = 0; i < 200; ++i) {
    uint32_t now = g_runtime->pool.free_count_estimate();
    if (now == prev) return now;
    prev = now;
    usleep(20000);
  }
  return prev;
}

}  // namespace

TEST(Recorder, AnEventLargerThanAChunkIsDroppedAndCountedWithoutLosingAChunk) {
  sigmatrace::test::TempDir dir;
  setenv("SIGMATRACE_OUTPUT", (dir / "exp").c_str(), 1);
  setenv("SIGMATRACE_CHUNK_KB", "4", 1);
  setenv("SIGMATRACE_BUFFER_MB", "1", 1);
  ASSERT_TRUE(start_runtime());
  record<EventType::user_mark>(1, 1);  // the thread takes its first chunk
  uint32_t free_before = settled_free_chunks();
  ThreadSlot& slot = g_runtime->slots[t_state.slot - 1];
  uint64_t dropped_before = slot.dropped_events.load();
  std::vector<uint8_t> big(8192, 0xab);  // more than a 4 KiB chunk can hold
  const uint64_t words[2] = {7, 8};
  for (int i = 0; i < 20; ++i)
    record_with_bytes<EventType::ucx_worker_create>(words, big.data(), static_cast<uint32_t>(big.size()));
  EXPECT_EQ(slot.dropped_events.load() - dropped_before, 20u);
  EXPECT_EQ(settled_free_chunks(), free_before) << "an oversized event cost the pool a chunk";
  record<EventType::user_mark>(2, 2);  // and recording goes on in the same chunk
  EXPECT_EQ(slot.dropped_events.load() - dropped_before, 20u);
  stop_runtime();
}

TEST(Recorder, AnEventRecordedBeforeACallCanBeAmendedOnlyWhileItsChunkIsTheThreads) {
  sigmatrace::test::TempDir dir;
  setenv("SIGMATRACE_OUTPUT", (dir / "exp").c_str(), 1);
  setenv("SIGMATRACE_CHUNK_KB", "4", 1);
  setenv("SIGMATRACE_BUFFER_MB", "1", 1);
  if (g_runtime) GTEST_SKIP() << "a runtime ran in this process already (one per process: ctest runs each test alone)";
  ASSERT_TRUE(start_runtime());
  uint64_t* e = record_before_call<EventType::ibv_post_send>(uint64_t{123}, uint64_t{7}, uint64_t{1}, uint64_t{64}, uint64_t{8});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e[0], 123u);
  EXPECT_EQ(e[2], 7u);
  EXPECT_EQ(e[6], 0u);  // the result, until amended
  EXPECT_EQ(still_buffered(e, EventType::ibv_post_send, 5), e);
  EXPECT_EQ(still_buffered(e, EventType::ibv_post_recv, 5), nullptr);  // not what is there
  EXPECT_EQ(still_buffered(e, EventType::ibv_post_send, 4), nullptr);
  record<EventType::user_mark>(1, 1);
  EXPECT_EQ(still_buffered(e, EventType::ibv_post_send, 5), e);  // later events do not move it
  // A chunk's worth of events (4 KiB, 32 bytes each) hands the chunk to the writer.
  const uint32_t chunk = t_state.chunk;
  for (int i = 0; i < 200; ++i) record<EventType::user_mark>(2, static_cast<uint64_t>(i));
  ASSERT_NE(t_state.chunk, chunk);
  EXPECT_EQ(still_buffered(e, EventType::ibv_post_send, 5), nullptr);
  EXPECT_EQ(still_buffered(nullptr, EventType::ibv_post_send, 5), nullptr);  // a dropped event
  stop_runtime();
}
