// Calibration math: mapping a process's TSC to wall-clock time from its samples.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/experiment_scan.h"

using sigmatrace::analysis::ClockSamplePoint;
using sigmatrace::analysis::fit_clock;

TEST(ClockFit, RecoversRateAndOffsetExactly) {
  // 2.5 GHz TSC that started 1e18 ns after the epoch.
  std::vector<ClockSamplePoint> s;
  for (uint64_t i = 0; i < 10; ++i) {
    uint64_t tsc = 1'000'000 + i * 2'500'000'000ull;
    s.push_back({tsc, 1'000'000'000'000'000'000ull + i * 1'000'000'000ull, i * 1'000'000'000ull});
  }
  auto f = fit_clock(s);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.ns_per_tick, 0.4, 1e-12);
  EXPECT_EQ(f.to_realtime_ns(1'000'000 + 5 * 2'500'000'000ull), 1'000'000'005'000'000'000);
  EXPECT_EQ(f.to_realtime_ns(1'000'000 + 2'500'000'001ull), 1'000'000'001'000'000'000);  // 1 tick = 0.4 ns
  EXPECT_LT(f.max_residual_ns, 1.0);
}

TEST(ClockFit, FollowsADriftingClock) {
  // The TSC runs 50 ppm fast against realtime: the fitted rate shows it.
  std::vector<ClockSamplePoint> s;
  for (uint64_t i = 0; i <= 100; ++i) {
    double real = i * 1e8;  // every 100 ms
    uint64_t tsc = static_cast<uint64_t>(real * 3.0 * (1 + 50e-6));
    s.push_back({tsc, static_cast<uint64_t>(1.7e18 + real), static_cast<uint64_t>(real)});
  }
  auto f = fit_clock(s);
  ASSERT_TRUE(f.valid);
  EXPECT_NEAR(f.ns_per_tick, 1.0 / (3.0 * (1 + 50e-6)), 1e-12);
  EXPECT_LT(f.max_residual_ns, 2.0);
}

TEST(ClockFit, ReportsTheResidualOfNoisySamples) {
  std::vector<ClockSamplePoint> s;
  for (uint64_t i = 0; i < 20; ++i) {
    int64_t noise = (i % 2) ? 300 : -300;  // +-300 ns of sampling jitter
    s.push_back({i * 1'000'000'000ull, static_cast<uint64_t>(5e17 + i * 1e9 + noise), 0});
  }
  auto f = fit_clock(s);
  ASSERT_TRUE(f.valid);
  // The best line tilts a little towards the first and last samples' noise.
  EXPECT_GE(f.max_residual_ns, 299.0);
  EXPECT_LE(f.max_residual_ns, 400.0);
}

TEST(ClockFit, NeedsTwoDistinctSamples) {
  EXPECT_FALSE(fit_clock({}).valid);
  EXPECT_FALSE(fit_clock({{100, 5, 5}}).valid);
  EXPECT_FALSE(fit_clock({{100, 5, 5}, {100, 5, 5}}).valid);
}
