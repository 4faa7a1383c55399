// Kernel spans from the ends the profiler saw (docs/gpu-doorbells.md, "Kernels"): which kernel of
// a stream a GPU doorbell at a given time belongs to, when the ends are untimed markers'
// (cuda_kernel_seen_end: the last look that found the kernel unfinished, then the look that
// found it done).
#include <gtest/gtest.h>

#include <map>

#include "analysis/experiment_model.h"
#include "format/trace_writer.h"
#include "support/temp_dir.h"

namespace sigmatrace::test {
namespace {

using format::EventType;

// Three kernels queued at once on one stream of GPU 0 (2 TSC ticks per ns): k1 rings doorbells
// and is seen running until 1500; k2, short, is never seen running (its running_tsc is its
// launch) and is found done at the same look as k1; k3 runs from then, seen running until 2900.
TEST(KernelSpans, UntimedEndsEndAtTheLastLookThatSawTheKernelRunning) {
  TempDir dir;
  {
    format::TraceFileWriter w;
    ASSERT_TRUE(w.open(dir / "h1.r0.p7.sgt", {{"host", "h1"}, {"pid", "7"}, {"rank", "0"}, {"mode", "simple"}}));
    w.add(0, EventType::clock_sync, 1000, {uint64_t{5000}, uint64_t{1}});
    const uint64_t stream = 0x5;
    const char* names[] = {"k1", "k2", "k3"};
    for (uint64_t k = 0; k < 3; ++k) {
      w.add(3, EventType::cuda_function, 1090 + k, {0xf1 + k, names[k]});
      // function stream device entry grid(3) block(3) shared result end_marked
      w.add(3, EventType::cuda_launch, 1100 + 10 * k, {0xf1 + k, stream, int64_t{0}, uint64_t{0}, uint64_t{1}, uint64_t{1}, uint64_t{1},
                                                      uint64_t{1}, uint64_t{1}, uint64_t{1}, uint64_t{0}, int64_t{0}, uint64_t{1}});
    }
    // function stream device launch_tsc running_tsc, at the look that found it done
    w.add(9, EventType::cuda_kernel_seen_end, 1600, {uint64_t{0xf1}, stream, int64_t{0}, uint64_t{1100}, uint64_t{1500}});
    w.add(9, EventType::cuda_kernel_seen_end, 1601, {uint64_t{0xf2}, stream, int64_t{0}, uint64_t{1110}, uint64_t{1110}});
    w.add(9, EventType::cuda_kernel_seen_end, 3000, {uint64_t{0xf3}, stream, int64_t{0}, uint64_t{1120}, uint64_t{2900}});
    w.add(0, EventType::clock_sync, 4000, {uint64_t{5000 + 1500}, uint64_t{2}});
    w.add(0, EventType::file_end, 4000, {uint64_t{1}, uint64_t{5}, uint64_t{0}, uint64_t{0}});
    ASSERT_TRUE(w.close());
  }
  analysis::ExperimentModel m = analysis::build_experiment_model(dir.path(), 1, nullptr);
  ASSERT_EQ(m.processes.size(), 1u);
  const analysis::ProcessRow& p = m.processes[0];
  auto at = [&](uint64_t tsc) {
    const std::string* name = p.kernel_at(tsc, 0);
    return name ? *name : std::string("(none)");
  };
  EXPECT_EQ(at(1400), "k1");
  // After k1's last look: k3's, though k1 was found done only at 1600 (k2 rang nothing).
  EXPECT_EQ(at(1550), "k3");
  EXPECT_EQ(at(2500), "k3");
  // k2's end, taken at its launch, is earlier than k1's: k3 still starts after k1, not at k2's end.
  EXPECT_EQ(at(1300), "k1");
  // k2 is still shown, from k1's end to the look that found it done, but given no doorbells.
  ASSERT_EQ(p.spans_on.count(0), 1u);
  const auto& spans = p.spans_on.at(0);
  ASSERT_EQ(spans.size(), 3u);
  std::map<uint64_t, analysis::ProcessRow::Span> by_function;
  for (const auto& s : spans) by_function.emplace(s.function, s);
  EXPECT_EQ(by_function.at(0xf1).end_tsc, 1500u);
  EXPECT_TRUE(by_function.at(0xf1).attributable);
  EXPECT_EQ(by_function.at(0xf2).start_tsc, 1500u);
  EXPECT_EQ(by_function.at(0xf2).end_tsc, 1601u);
  EXPECT_FALSE(by_function.at(0xf2).attributable);
  EXPECT_EQ(by_function.at(0xf3).start_tsc, 1500u);
  EXPECT_EQ(by_function.at(0xf3).end_tsc, 2900u);
}

}  // namespace
}  // namespace sigmatrace::test
