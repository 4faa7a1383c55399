// The ofi provider's RMA, atomic and tagged-vector wrappers, on a real libfabric endpoint (shm)
// that addresses itself (programs/ofi_rma_atomic.c): each operation's record holds the length,
// target address, atomic kind, tag and ignore mask the program passed, in every trace mode the
// program's output is unchanged, and aggregate mode counts each operation.
#include <gtest/gtest.h>

#include <vector>

#include "ucx_ofi_support.h"

using namespace sigmatrace::test;
using namespace sigmatrace::test::ucx_ofi;

namespace {

// The fields of ofi_op: op ep bytes peer tag remote_addr context result tag_ignore.
enum Field { kOp, kEp, kBytes, kPeer, kTag, kRemoteAddr, kContext, kResult, kTagIgnore };

// libfabric's values for the atomics the program uses (enum fi_datatype, enum fi_op).
constexpr uint64_t kUint32 = 5, kUint64 = 7, kSum = 2, kBor = 6, kCswap = 12;
constexpr uint64_t atomic_kind(uint64_t op, uint64_t dt) { return op << 8 | dt; }

struct Expected {
  OfiOp op;
  uint64_t bytes;
  int64_t target;  // offset into the program's region (-1: no remote address)
  uint64_t tag = 0, tag_ignore = 0;
  bool context = true;
};

// In the program's order: RMA writes, reads, atomics, then the tagged receive and send.
const std::vector<Expected> kOperations = {
    {OfiOp::write, 100, 0},
    {OfiOp::writev, 70, 256},
    {OfiOp::writemsg, 50, 512},
    {OfiOp::inject_write, 8, 768, 0, 0, false},
    {OfiOp::read, 60, 0},
    {OfiOp::readv, 30, 256},
    {OfiOp::readmsg, 16, 512},
    {OfiOp::atomic, 16, 2048, atomic_kind(kSum, kUint64)},
    {OfiOp::fetch_atomic, 8, 2048, atomic_kind(kSum, kUint64)},
    {OfiOp::compare_atomic, 8, 2064, atomic_kind(kCswap, kUint64)},
    {OfiOp::atomicmsg, 12, 3072, atomic_kind(kBor, kUint32)},
    {OfiOp::inject_atomic, 4, 3088, atomic_kind(kSum, kUint32), 0, false},
    {OfiOp::trecv, 64, -1, 0x5a00, 0xff},
    {OfiOp::tsendv, 32, -1, 0x5a42},
};

std::string program() { return build_path("tests/bin/ofi_rma_atomic"); }

class OfiOperations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!file_exists(program())) GTEST_SKIP() << "ofi_rma_atomic was not built (no libfabric headers)";
    plain_ = run_process({program()});
    if (plain_.exit_code == 77) GTEST_SKIP() << "skipped: " << plain_.err;
    ASSERT_EQ(plain_.exit_code, 0) << plain_.err;
  }
  // Profiles the program in one mode: it succeeds, its output is the untraced run's, and the
  // experiment holds its one process, in traced_.
  void run_traced(const std::string& mode) {
    ProcessResult r = run_process({build_path("bin/sigmatrace"), "profile", "--mode", mode, "-o", dir_.path(), "--", program()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain_.out);
    std::vector<ProcessEvents> procs;
    std::string err;
    ASSERT_TRUE(read_experiment(dir_.path(), &procs, &err)) << err;
    ASSERT_EQ(procs.size(), 1u);
    traced_ = std::move(procs[0]);
  }
  ProcessResult plain_;
  TempDir dir_;
  ProcessEvents traced_;
};

TEST_F(OfiOperations, EachRmaAtomicAndTaggedCallRecordsWhatItWasGiven) {
  ASSERT_NO_FATAL_FAILURE(run_traced("full"));
  std::vector<const TraceEvent*> ops = traced_.of(EventType::ofi_op);
  ASSERT_EQ(ops.size(), kOperations.size());
  // The region's address differs from run to run: targets are checked as offsets from the first
  // write's, which is at offset 0.
  const uint64_t region = (*ops[0])[kRemoteAddr];
  for (size_t i = 0; i < ops.size(); ++i) {
    const TraceEvent& e = *ops[i];
    const Expected& want = kOperations[i];
    SCOPED_TRACE("operation " + std::to_string(i));
    EXPECT_EQ(e[kOp], static_cast<uint64_t>(want.op));
    EXPECT_EQ(e[kBytes], want.bytes);
    EXPECT_EQ(e[kRemoteAddr], want.target < 0 ? 0 : region + static_cast<uint64_t>(want.target));
    EXPECT_EQ(e[kTag], want.tag);
    EXPECT_EQ(e[kTagIgnore], want.tag_ignore);
    EXPECT_EQ(e[kContext] != 0, want.context);
    EXPECT_EQ(e[kResult], 0u);
    EXPECT_EQ(e[kEp], (*ops[0])[kEp]);
  }
  EXPECT_EQ(errors(traced_), 0u);
}

TEST_F(OfiOperations, SimpleModeRecordsTheSameOperations) {
  ASSERT_NO_FATAL_FAILURE(run_traced("simple"));
  std::vector<const TraceEvent*> ops = traced_.of(EventType::ofi_op);
  ASSERT_EQ(ops.size(), kOperations.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ((*ops[i])[kOp], static_cast<uint64_t>(kOperations[i].op)) << "operation " << i;
    EXPECT_EQ((*ops[i])[kBytes], kOperations[i].bytes) << "operation " << i;
  }
}

TEST_F(OfiOperations, AggregateModeCountsEachOperationWithItsBytes) {
  ASSERT_NO_FATAL_FAILURE(run_traced("aggregate"));
  EXPECT_EQ(traced_.count(EventType::ofi_op), 0u);
  for (const Expected& want : kOperations) {
    SCOPED_TRACE("op " + std::to_string(static_cast<uint64_t>(want.op)));
    EXPECT_EQ(aggregate_count(traced_, AggregateKey::ofi_ep_op, static_cast<uint64_t>(want.op)), 1u);
    uint64_t bytes = 0;
    for (const TraceEvent* e : traced_.of(EventType::aggregate_entry))
      if ((*e)[1] == static_cast<uint64_t>(AggregateKey::ofi_ep_op) && (*e)[3] == static_cast<uint64_t>(want.op)) bytes += (*e)[5];
    EXPECT_EQ(bytes, want.bytes);
  }
}

}  // namespace
