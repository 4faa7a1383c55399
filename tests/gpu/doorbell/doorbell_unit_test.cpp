// The pieces of the doorbell hijack that are pure functions: what a doorbell value means for its
// QP (DoorbellTracker), the devx command mailboxes the devx provider decodes, the order in which
// pollers take CPUs (poller_cpus) and the CPU lists they are given (cpu_list). Commands are built
// with the same src/mlx5 layouts softnic executes, with values chosen so that every field lands in
// a different bit position.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "analysis/experiment_model.h"
#include "mlx5/prm.hpp"
#include "mlx5/wqe.hpp"
#include "profiler/doorbell/doorbell_tracker.h"
#include "profiler/doorbell/poller_cpus.h"
#include "profiler/providers/devx/devx_commands.h"
#include "profiler/runtime/config.h"
#include "profiler/runtime/cpu_list.h"
#include "support/temp_dir.h"

namespace m5 = sigmatrace::mlx5;
namespace prm = sigmatrace::mlx5::prm;
using sigmatrace::profiler::doorbell::DoorbellTracker;
namespace devx = sigmatrace::profiler::devx;

TEST(DoorbellTracker, EachDoorbellCountsTheWqebbsSinceTheQpsPreviousOne) {
  DoorbellTracker t;
  auto s = t.observe(m5::doorbell_value(1, 0x1234));
  EXPECT_EQ(s.qpn, 0x1234u);
  EXPECT_EQ(s.pi, 1u);
  EXPECT_EQ(s.delta, 1u);  // a new QP starts at index 0
  s = t.observe(m5::doorbell_value(2, 0x1234));
  EXPECT_EQ(s.delta, 1u);
  // Two doorbells the poller saw as one (the GPU rang 3 then 5): nothing is lost.
  s = t.observe(m5::doorbell_value(5, 0x1234));
  EXPECT_EQ(s.pi, 5u);
  EXPECT_EQ(s.delta, 3u);
  // Another QP through the same page keeps its own index.
  s = t.observe(m5::doorbell_value(4, 0x99));
  EXPECT_EQ(s.qpn, 0x99u);
  EXPECT_EQ(s.delta, 4u);
  EXPECT_EQ(t.observe(m5::doorbell_value(7, 0x1234)).delta, 2u);
  EXPECT_EQ(t.untracked_qps(), 0u);
}

TEST(DoorbellTracker, TheSixteenBitProducerIndexWraps) {
  DoorbellTracker t;
  t.observe(m5::doorbell_value(0xfffe, 7));
  auto s = t.observe(m5::doorbell_value(0x0003, 7));
  EXPECT_EQ(s.pi, 3u);
  EXPECT_EQ(s.delta, 5u);
}

TEST(DoorbellTracker, MoreQpsThanSlotsAreCountedNotMixedUp) {
  DoorbellTracker t;
  for (uint32_t q = 1; q <= DoorbellTracker::kMaxQps + 3; ++q) t.observe(m5::doorbell_value(1, q));
  EXPECT_EQ(t.untracked_qps(), 3u);
  EXPECT_EQ(t.observe(m5::doorbell_value(2, 1)).delta, 1u);  // a tracked QP still counts right
}

// libmlx5 (and a BlueFlame copy) rings with the last WQE's control segment: its own index, its
// opcode and size. The queue is filled up to past that WQE: a 3-WQEBB WQE at index 10 -> 13.
TEST(DoorbellTracker, AControlSegmentCopyAnnouncesTheIndexPastItsWqe) {
  DoorbellTracker t;
  m5::CtrlSeg c{};
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, 10, m5::kOpRdmaWrite);
  c.qpn_ds = m5::ctrl_qpn_ds(0x42, 9);  // 144 bytes: 3 WQEBBs
  uint64_t v;
  memcpy(&v, &c, 8);
  auto s = t.observe(v);
  EXPECT_EQ(s.pi, 13u);
  EXPECT_EQ(s.delta, 13u);
  c.opmod_idx_opcode = m5::ctrl_opmod_idx_opcode(0, 13, m5::kOpNop);
  c.qpn_ds = m5::ctrl_qpn_ds(0x42, 1);
  memcpy(&v, &c, 8);
  EXPECT_EQ(t.observe(v).delta, 1u) << "a one-WQEBB NOP";
  EXPECT_EQ(t.observe(m5::doorbell_value(20, 0x42)).delta, 6u) << "the GPU stacks' form: the next free index";
}

// A QP destroyed and its number given to a new QP of the same device: the new one starts at
// index 0, in forward mode as with WQE recovery.
TEST(DoorbellTracker, AReusedQpNumberStartsFromIndexZero) {
  namespace db = sigmatrace::profiler::doorbell;
  db::SendQueue q;
  q.device_context = 0xc0ffee;
  q.qpn = 0x77;
  q.log_wqebbs = 6;
  db::add_send_queue(q);
  DoorbellTracker t;
  EXPECT_EQ(t.observe(m5::doorbell_value(40, 0x77), 0xc0ffee).delta, 40u);
  db::remove_send_queue(0xc0ffee, 0x77);
  db::add_send_queue(q);  // the same number, a new QP
  auto s = t.observe(m5::doorbell_value(3, 0x77), 0xc0ffee);
  EXPECT_EQ(s.delta, 3u) << "counted from the new QP's index 0, not from the old one's 40";
  EXPECT_EQ(t.observe(m5::doorbell_value(5, 0x77), 0xc0ffee).delta, 2u);
  db::remove_send_queue(0xc0ffee, 0x77);
}

TEST(DevxCommands, CreateQpIsDecodedFromItsMailbox) {
  uint8_t in[prm::kCreateQpInSize] = {}, out[prm::kCreateQpOutSize] = {};
  namespace q = prm::qp;
  prm::set(in, prm::kInOpcode, prm::kCreateQp);
  prm::set(in, q::st, prm::kQpStRc);
  prm::set(in, q::pd, 0x5a5a5);
  prm::set(in, q::uar_page, 0x1357);
  prm::set(in, q::rq_type, prm::kRqTypeSrq);  // no receive queue of its own (as NVSHMEM's)
  prm::set(in, q::cqn_snd, 0x222);
  prm::set(in, q::cqn_rcv, 0x333);
  prm::set(in, q::log_sq_size, 11);
  prm::set(in, q::log_rq_size, 3);
  prm::set(in, q::dbr_umem_valid, 1);
  prm::set(in, q::dbr_umem_id, 0x77);
  prm::set64(in, q::dbr_addr, 0x10040);
  prm::set(in, q::wq_umem_valid, 1);
  prm::set(in, q::wq_umem_id, 0x88);
  prm::set64(in, q::wq_umem_offset, 0x2000);
  prm::set(out, q::out_qpn, 0xabcde);
  devx::QpCreate qp;
  ASSERT_TRUE(devx::decode_create_qp(in, sizeof in, out, sizeof out, &qp));
  EXPECT_EQ(qp.qpn, 0xabcdeu);
  EXPECT_EQ(qp.service_type, prm::kQpStRc);
  EXPECT_EQ(qp.pd, 0x5a5a5u);
  EXPECT_EQ(qp.uar_page, 0x1357u);
  EXPECT_EQ(qp.send_cqn, 0x222u);
  EXPECT_EQ(qp.recv_cqn, 0x333u);
  EXPECT_EQ(qp.log_sq_size, 11u);
  EXPECT_EQ(qp.log_rq_size, 3u);
  EXPECT_TRUE(qp.sq_in_umem && qp.dbr_in_umem);
  EXPECT_EQ(qp.sq_umem_id, 0x88u);
  EXPECT_EQ(qp.sq_umem_offset, 0x2000u);
  EXPECT_EQ(qp.dbr_umem_id, 0x77u);
  EXPECT_EQ(qp.dbr_offset, 0x10040u);
  EXPECT_EQ(devx::command_of(in, sizeof in), prm::kCreateQp);
  // A regular receive queue (8 WQEs of 2^(2+4) bytes) comes first in the WQ buffer.
  prm::set(in, q::rq_type, prm::kRqTypeRegular);
  prm::set(in, q::log_rq_stride, 2);
  ASSERT_TRUE(devx::decode_create_qp(in, sizeof in, out, sizeof out, &qp));
  EXPECT_EQ(qp.sq_umem_offset, 0x2000u + 8 * 64);
  // Too short a mailbox is not read past its end.
  EXPECT_FALSE(devx::decode_create_qp(in, 64, out, sizeof out, &qp));
  devx::CqCreate cq;
  EXPECT_FALSE(devx::decode_create_cq(in, sizeof in, out, sizeof out, &cq));  // not a CREATE_CQ
}

TEST(DevxCommands, CreateCqIsDecodedFromItsMailbox) {
  uint8_t in[prm::kCreateCqInSize] = {}, out[prm::kCreateCqOutSize] = {};
  namespace c = prm::cq;
  prm::set(in, prm::kInOpcode, prm::kCreateCq);
  prm::set(in, c::cq_umem_valid, 1);
  prm::set(in, c::cq_umem_id, 0x42);
  prm::set64(in, c::cq_umem_offset, 0x4000);
  prm::set(in, c::dbr_umem_valid, 1);
  prm::set(in, c::dbr_umem_id, 0x43);
  prm::set64(in, c::dbr_addr, 0x4048);
  prm::set(in, c::cc, 1);
  prm::set(in, c::log_cq_size, 9);
  prm::set(in, c::uar_page, 0x99);
  prm::set(out, c::out_cqn, 0x4321);
  prm::set(out, prm::kOutStatus, 0);
  devx::CqCreate cq;
  ASSERT_TRUE(devx::decode_create_cq(in, sizeof in, out, sizeof out, &cq));
  EXPECT_EQ(cq.cqn, 0x4321u);
  EXPECT_EQ(cq.umem_id, 0x42u);
  EXPECT_EQ(cq.umem_offset, 0x4000u);
  EXPECT_EQ(cq.dbr_umem_id, 0x43u);
  EXPECT_EQ(cq.dbr_offset, 0x4048u);
  EXPECT_TRUE(cq.collapsed);
  EXPECT_EQ(cq.log_cq_size, 9u);
  EXPECT_EQ(cq.uar_page, 0x99u);
}

TEST(DevxCommands, QpTransitionsCarryThePeerAndTheSequenceNumbers) {
  namespace q = prm::qp;
  uint8_t in[prm::kModifyQpInSize] = {};
  prm::set(in, prm::kInOpcode, prm::kInit2Rtr);
  prm::set(in, q::in_qpn, 0x111);
  prm::set(in, q::remote_qpn, 0x222);
  prm::set(in, q::rlid, 0x33);
  prm::set(in, q::next_rcv_psn, 0x4455);
  prm::set(in, q::mtu, 5);
  prm::set(in, q::grh, 1);
  for (int i = 0; i < 16; ++i) in[q::kRgidRipByte + i] = uint8_t(0xf0 + i);
  devx::QpModify m;
  ASSERT_TRUE(devx::decode_modify_qp(in, sizeof in, &m));
  EXPECT_EQ(m.command, prm::kInit2Rtr);
  EXPECT_EQ(m.qpn, 0x111u);
  EXPECT_EQ(m.remote_qpn, 0x222u);
  EXPECT_EQ(m.remote_lid, 0x33u);
  EXPECT_EQ(m.recv_psn, 0x4455u);
  EXPECT_EQ(m.mtu, 5u);
  EXPECT_EQ(m.remote_gid_hi, 0xf0f1f2f3f4f5f6f7ull);
  EXPECT_EQ(m.remote_gid_lo, 0xf8f9fafbfcfdfeffull);

  uint8_t rts[prm::kModifyQpInSize] = {};
  prm::set(rts, prm::kInOpcode, prm::kRtr2Rts);
  prm::set(rts, q::in_qpn, 0x111);
  prm::set(rts, q::next_send_psn, 0xabcdef);
  ASSERT_TRUE(devx::decode_modify_qp(rts, sizeof rts, &m));
  EXPECT_EQ(m.send_psn, 0xabcdefu);
  EXPECT_EQ(m.remote_qpn, 0u);

  uint8_t err[16] = {};
  prm::set(err, prm::kInOpcode, prm::k2Err);
  prm::set(err, q::in_qpn, 0x111);
  ASSERT_TRUE(devx::decode_modify_qp(err, sizeof err, &m));
  EXPECT_EQ(m.qpn, 0x111u);
  uint8_t other[16] = {};
  prm::set(other, prm::kInOpcode, prm::kQueryQp);
  EXPECT_FALSE(devx::decode_modify_qp(other, sizeof other, &m));
}

TEST(DoorbellConfig, VariablesAreValidated) {
  using namespace sigmatrace::profiler;
  Config c;
  std::string err;
  char e1[] = "SIGMATRACE_DOORBELLS=off", e2[] = "SIGMATRACE_DOORBELL_CPUS=3,5", e3[] = "SIGMATRACE_DOORBELL_PAGES_PER_POLLER=4";
  char* ok_env[] = {e1, e2, e3, nullptr};
  ASSERT_TRUE(parse_config(ok_env, {}, &c, &err)) << err;
  EXPECT_EQ(c.doorbells, DoorbellMode::off);
  EXPECT_EQ(c.doorbell_cpus, (std::vector<int>{3, 5}));
  EXPECT_EQ(c.doorbell_pages_per_poller, 4u);
  char r1[] = "SIGMATRACE_DOORBELL_CPUS=12-15,2";
  char* range_env[] = {r1, nullptr};
  ASSERT_TRUE(parse_config(range_env, {}, &c, &err)) << err;
  EXPECT_EQ(c.doorbell_cpus, (std::vector<int>{12, 13, 14, 15, 2}));
  for (std::string bad : {"SIGMATRACE_DOORBELL_CPUS=3,,5", "SIGMATRACE_DOORBELL_CPUS=15-12", "SIGMATRACE_DOORBELL_CPUS=4096"}) {
    char* bad_cpus[] = {bad.data(), nullptr};
    EXPECT_FALSE(parse_config(bad_cpus, {}, &c, &err)) << bad;
    EXPECT_NE(err.find("SIGMATRACE_DOORBELL_CPUS"), std::string::npos) << err;
  }
  char w1[] = "SIGMATRACE_DOORBELLS=wqe", w2[] = "SIGMATRACE_WQE_BATCH=32";
  char* wqe[] = {w1, w2, nullptr};
  ASSERT_TRUE(parse_config(wqe, {}, &c, &err)) << err;
  EXPECT_EQ(c.doorbells, DoorbellMode::wqe);
  EXPECT_EQ(c.wqe_batch, 32u);
  char w3[] = "SIGMATRACE_WQE_BATCH=sync", w4[] = "SIGMATRACE_WQE_COPY=doorbell";
  char* sync[] = {w3, w4, nullptr};
  ASSERT_TRUE(parse_config(sync, {}, &c, &err)) << err;
  EXPECT_EQ(c.wqe_batch, kWqeBatchSync);
  EXPECT_TRUE(c.wqe_copy_at_doorbell);
  for (const char* bad : {"SIGMATRACE_WQE_BATCH=0", "SIGMATRACE_WQE_BATCH=65537", "SIGMATRACE_WQE_BATCH=async", "SIGMATRACE_WQE_COPY=later"}) {
    std::string b = bad;
    char* env[] = {b.data(), nullptr};
    EXPECT_FALSE(parse_config(env, {}, &c, &err)) << bad;
    EXPECT_NE(err.find(std::string(bad).substr(0, std::string(bad).find('='))), std::string::npos) << err;
  }
  char b3[] = "SIGMATRACE_DOORBELL_PAGES_PER_POLLER=65";
  char* pages[] = {b3, nullptr};
  EXPECT_FALSE(parse_config(pages, {}, &c, &err));
}

// Which kernel rang a doorbell: by the kernels' spans on the GPU when the profiler saw them end,
// else the last one launched (what asynchronous launches make wrong: gda queues barrier, put,
// barrier at once, and the put's doorbells come after the second barrier's launch).
TEST(KernelAttribution, SpansNameTheRunningKernelLaunchesTheLastQueued) {
  using sigmatrace::analysis::ProcessRow;
  ProcessRow p;
  p.kernel_names = {{1, "k_barrier"}, {2, "k_put"}};
  p.launches = {{100, 1}, {110, 2}, {120, 1}};
  p.launches_on[0] = p.launches;
  EXPECT_EQ(*p.kernel_at(500, 0), "k_barrier") << "without spans: the last launched";
  EXPECT_EQ(p.kernel_at(50, 0), nullptr) << "before any launch";
  p.spans_on[0] = {{100, 200, 1}, {200, 1000, 2}, {1000, 1100, 1}};
  p.span_slack_ticks = 5;
  EXPECT_EQ(*p.kernel_at(150, 0), "k_barrier");
  EXPECT_EQ(*p.kernel_at(500, 0), "k_put");
  EXPECT_EQ(*p.kernel_at(1004, 0), "k_barrier") << "the later-started of two spans that hold it";
  EXPECT_EQ(*p.kernel_at(1103, 0), "k_barrier") << "seen just after the kernel ended";
  EXPECT_EQ(*p.kernel_at(2000, 0), "k_barrier") << "after every span: the last launched";
  EXPECT_EQ(*p.kernel_at(500, 1), "k_barrier") << "another GPU without spans or launches: any GPU's last launch";
  // A kernel still running when the trace ended has an open span.
  p.spans_on[0].push_back({1200, ~uint64_t{0} - p.span_slack_ticks, 2});
  EXPECT_EQ(*p.kernel_at(1150, 0), "k_barrier");
  EXPECT_EQ(*p.kernel_at(99999, 0), "k_put");
}

namespace {
namespace db = sigmatrace::profiler::doorbell;

// 16 CPUs on 8 cores with two hardware threads each, numbered as Intel and AMD hosts number them:
// CPU c and CPU c + 8 are one core's.
std::vector<int> eight_cores_two_threads() {
  std::vector<int> core_of(16);
  for (int c = 0; c < 16; ++c) core_of[size_t(c)] = c % 8;
  return core_of;
}
std::vector<bool> application_on(std::initializer_list<int> cpus) {
  std::vector<bool> a(16, false);
  for (int c : cpus) a[size_t(c)] = true;
  return a;
}
}  // namespace

// A rank bound to hardware threads 0 and 1 (mpirun --bind-to hwthread): the pollers take the six
// cores it has no thread on, one thread of each before a second, and the siblings of its own
// threads (8, 9) only last. Before, CPU 8 came right after 7: a poller spinning on the other
// hyperthread of the rank's core.
TEST(PollerCpus, WholeFreeCoresComeBeforeTheApplicationsSiblings) {
  EXPECT_EQ(db::order_poller_cpus(application_on({0, 1}), eight_cores_two_threads()),
            (std::vector<int>{2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 8, 9}));
  // Bound to a whole core (--bind-to core: both its threads): every other core is free.
  EXPECT_EQ(db::order_poller_cpus(application_on({0, 8}), eight_cores_two_threads()),
            (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15}));
  // Without SMT every CPU is its own core: the CPUs outside the mask, in order.
  std::vector<int> own(16);
  for (int c = 0; c < 16; ++c) own[size_t(c)] = c;
  EXPECT_EQ(db::order_poller_cpus(application_on({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), own), (std::vector<int>{12, 13, 14, 15}));
  // An application that may run everywhere leaves nothing to choose.
  std::vector<bool> all(16, true);
  EXPECT_TRUE(db::order_poller_cpus(all, eight_cores_two_threads()).empty());
}

// Cores come from each CPU's thread_siblings_list, in the sysfs list format; a CPU without one
// (offline, or a sysfs without topology) is a core of its own.
TEST(PollerCpus, CoresAreReadFromTheSiblingLists) {
  sigmatrace::test::TempDir t;
  auto siblings = [&](int cpu, const std::string& list) {
    const std::string dir = t / ("cpu" + std::to_string(cpu) + "/topology");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/thread_siblings_list") << list << "\n";
  };
  siblings(0, "0,2");
  siblings(1, "1-1");
  siblings(2, "0,2");
  siblings(4, "garbage");
  EXPECT_EQ(db::cores_of_cpus(5, t.path()), (std::vector<int>{0, 1, 0, 3, 4}));
}

// One parser for the sysfs sibling lists and SIGMATRACE_DOORBELL_CPUS.
TEST(CpuList, LinuxCpuListsAreParsedAndBadOnesRefused) {
  std::vector<int> cpus;
  EXPECT_TRUE(sigmatrace::profiler::parse_cpu_list("0-3,8,10-11\n", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(sigmatrace::profiler::parse_cpu_list("1023", &cpus));
  for (const char* bad : {"", "\n", "3-1", "1,,2", "1,", "x", "1-", "-1", "2 3", "1\n2", "1024", "0-1024"})
    EXPECT_FALSE(sigmatrace::profiler::parse_cpu_list(bad, &cpus)) << bad;
}
