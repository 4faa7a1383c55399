// The lock-free chunk pool under contention: every chunk is accounted for, none is duplicated.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "profiler/runtime/chunk_pool.h"

using namespace sigmatrace::profiler;

TEST(ChunkPool, StartsWithEveryChunkFree) {
  ChunkPool pool;
  ASSERT_TRUE(pool.init(4096, 16));
  std::vector<bool> seen(16, false);
  for (int i = 0; i < 16; ++i) {
    uint32_t c = pool.pop_free();
    ASSERT_LT(c, 16u);
    EXPECT_FALSE(seen[c]);
    seen[c] = true;
  }
  EXPECT_EQ(pool.pop_free(), kNoChunk);
  EXPECT_EQ(pool.pop_full(), kNoChunk);
}

TEST(ChunkPool, FullQueueIsFifo) {
  ChunkPool pool;
  ASSERT_TRUE(pool.init(4096, 8));
  for (uint32_t i : {5u, 2u, 7u}) pool.push_full(i);
  EXPECT_EQ(pool.pop_full(), 5u);
  EXPECT_EQ(pool.pop_full(), 2u);
  EXPECT_EQ(pool.pop_full(), 7u);
  EXPECT_EQ(pool.pop_full(), kNoChunk);
}

TEST(ChunkPool, ProducersAndOneConsumerLoseNothing) {
  constexpr uint32_t kChunks = 64;
  constexpr int kThreads = 6;
  constexpr int kRounds = 20000;
  ChunkPool pool;
  ASSERT_TRUE(pool.init(1024, kChunks));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> produced{0}, consumed{0};
  std::vector<std::atomic<int>> owners(kChunks);
  std::thread consumer([&] {
    while (!stop.load() || consumed.load() < produced.load()) {
      uint32_t c = pool.pop_full();
      if (c == kNoChunk) continue;
      ASSERT_EQ(owners[c].exchange(0), 1) << "chunk " << c << " was queued twice";
      ++consumed;
      pool.push_free(c);
    }
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t)
    producers.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        uint32_t c = pool.pop_free();
        if (c == kNoChunk) continue;
        ASSERT_EQ(owners[c].exchange(1), 0) << "chunk " << c << " handed out twice";
        ++produced;
        pool.push_full(c);
      }
    });
  for (auto& p : producers) p.join();
  stop = true;
  consumer.join();
  EXPECT_EQ(produced.load(), consumed.load());
  uint32_t free_now = 0;
  while (pool.pop_free() != kNoChunk) ++free_now;
  EXPECT_EQ(free_now, kChunks);
}
