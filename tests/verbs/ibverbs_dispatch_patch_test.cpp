// The ibverbs provider's table patching, checked on verbs objects laid out exactly as rdma-core lays
// them out (a verbs_context around an ibv_context, an ibv_qp_ex, an ibv_cq_ex) but built here, with
// fake "provider" functions: every wrapper must forward its arguments untouched and return exactly
// what the real function returned; re-patching after a provider rewrote a pointer must pick up the
// new real function; the dlsym/dlvsym hooks must hand out wrappers only for names that exist.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

#include "profiler/lifecycle/lifecycle.h"
#include "profiler/providers/dl_resolver_hooks.h"
#include "profiler/providers/verbs/ibverbs_state.h"
#include "support/temp_dir.h"
#include "support/trace_events.h"
#include <infiniband/mlx5dv.h>

using namespace sigmatrace::profiler;
using namespace sigmatrace::profiler::ibv;

namespace {

struct Calls {
  int post_send = 0, post_recv = 0, poll_cq = 0, srq_recv = 0, rdma_write = 0, set_sge = 0, complete_reset = 0, complete_rts = 0,
      start_poll = 0, next_poll = 0;
  int post_send_result = 0, complete_result = 0;
  ibv_qp* last_qp = nullptr;
  ibv_send_wr* last_send_wr = nullptr;
  uint32_t last_rkey = 0, last_lkey = 0, last_length = 0;
  uint64_t last_raddr = 0, last_addr = 0;
};
Calls g_calls;

int fake_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  ++g_calls.post_send;
  g_calls.last_qp = qp;
  g_calls.last_send_wr = wr;
  if (g_calls.post_send_result) *bad = wr->next ? wr->next : wr;
  return g_calls.post_send_result;
}
int fake_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**) { return ++g_calls.post_recv, 0; }
int fake_post_srq_recv(ibv_srq*, ibv_recv_wr*, ibv_recv_wr**) { return ++g_calls.srq_recv, 0; }
int fake_poll_cq(ibv_cq*, int n, ibv_wc* wc) {
  ++g_calls.poll_cq;
  for (int i = 0; i < n && i < 2; ++i) {
    std::memset(&wc[i], 0, sizeof wc[i]);
    wc[i].wr_id = 100 + i;
    wc[i].status = i == 1 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS;
    wc[i].qp_num = 7;
  }
  return n < 2 ? n : 2;
}
void fake_wr_rdma_write(ibv_qp_ex*, uint32_t rkey, uint64_t raddr) {
  ++g_calls.rdma_write;
  g_calls.last_rkey = rkey;
  g_calls.last_raddr = raddr;
}
void fake_wr_set_sge(ibv_qp_ex*, uint32_t lkey, uint64_t addr, uint32_t length) {
  ++g_calls.set_sge;
  g_calls.last_lkey = lkey;
  g_calls.last_addr = addr;
  g_calls.last_length = length;
}
void fake_wr_start(ibv_qp_ex*) {}
void fake_wr_send(ibv_qp_ex*) {}
void fake_wr_rdma_read(ibv_qp_ex*, uint32_t, uint64_t) {}
void fake_wr_set_sge_list(ibv_qp_ex*, size_t, const ibv_sge*) {}
void fake_wr_set_inline_data(ibv_qp_ex*, void*, size_t) {}
int fake_wr_complete_reset(ibv_qp_ex*) { return ++g_calls.complete_reset, EINVAL; }
int fake_wr_complete_rts(ibv_qp_ex*) { return ++g_calls.complete_rts, g_calls.complete_result; }
void fake_wr_abort(ibv_qp_ex*) {}
int fake_start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr*) {
  ++g_calls.start_poll;
  cq->status = IBV_WC_SUCCESS;
  cq->wr_id = 55;
  return 0;
}
int fake_next_poll(ibv_cq_ex*) { return ++g_calls.next_poll, ENOENT; }
ibv_wc_opcode fake_read_opcode(ibv_cq_ex*) { return IBV_WC_RDMA_WRITE; }
uint32_t fake_read_u32(ibv_cq_ex*) { return 64; }
unsigned fake_read_wc_flags(ibv_cq_ex*) { return 0; }

// One emulated device: the verbs_context that rdma-core allocates around each ibv_context.
struct FakeDevice {
  verbs_context vctx{};
  FakeDevice() {
    vctx.sz = sizeof(verbs_context);
    vctx.context.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);
    vctx.context.ops.post_send = &fake_post_send;
    vctx.context.ops.post_recv = &fake_post_recv;
    vctx.context.ops.post_srq_recv = &fake_post_srq_recv;
    vctx.context.ops.poll_cq = &fake_poll_cq;
  }
  ibv_context* ctx() { return &vctx.context; }
};

struct FakeQp {
  ibv_qp_ex qpx{};
  explicit FakeQp(ibv_context* ctx, uint32_t qpn) {
    qpx.qp_base.context = ctx;
    qpx.qp_base.qp_num = qpn;
    qpx.wr_rdma_write = &fake_wr_rdma_write;
    qpx.wr_set_sge = &fake_wr_set_sge;
    qpx.wr_complete = &fake_wr_complete_reset;  // as mlx5 does before RTS
    qpx.wr_abort = &fake_wr_abort;
  }
  ibv_qp* qp() { return &qpx.qp_base; }
};

// A device and a QP in RTS on it with every builder the batch tests use, both patched for the
// test's lifetime.
struct FakeBuilderQp {
  FakeDevice dev;
  FakeQp fake;
  ibv_qp_ex& qpx;
  explicit FakeBuilderQp(uint32_t qpn) : fake((patch_context(dev.ctx()), dev.ctx()), qpn), qpx(fake.qpx) {
    qpx.wr_start = &fake_wr_start;
    qpx.wr_send = &fake_wr_send;
    qpx.wr_rdma_read = &fake_wr_rdma_read;
    qpx.wr_set_sge_list = &fake_wr_set_sge_list;
    qpx.wr_set_inline_data = &fake_wr_set_inline_data;
    qpx.wr_complete = &fake_wr_complete_rts;
    patch_qp_ex(track_qp(fake.qp()), &qpx);
  }
  ~FakeBuilderQp() {
    forget_qp(fake.qp());
    forget_context(dev.ctx());
  }
  // Three batches: four WRs of three opcodes and every kind of data setter; one aborted; one send.
  void post_batches() {
    ibv_qp_ex* q = &qpx;
    const ibv_sge list[2] = {{0x1000, 30, 1}, {0x2000, 40, 1}};
    char inline_bytes[8] = {};
    ibv_wr_start(q);
    ibv_wr_rdma_write(q, 1, 0x9000), ibv_wr_set_sge(q, 1, 0x1000, 100);
    ibv_wr_send(q), ibv_wr_set_sge_list(q, 2, list);
    ibv_wr_rdma_write(q, 1, 0x9100), ibv_wr_set_inline_data(q, inline_bytes, sizeof inline_bytes);
    ibv_wr_rdma_read(q, 1, 0x9200), ibv_wr_set_sge(q, 1, 0x3000, 1000);
    ASSERT_EQ(ibv_wr_complete(q), 0);
    ibv_wr_start(q);
    ibv_wr_rdma_write(q, 1, 0x9000), ibv_wr_set_sge(q, 1, 0x1000, 5);
    ibv_wr_abort(q);
    ibv_wr_start(q);
    ibv_wr_send(q), ibv_wr_set_sge(q, 1, 0x1000, 7);
    ASSERT_EQ(ibv_wr_complete(q), 0);
  }
};

// A zeroed aggregate table as this thread's for the test's lifetime (Aggregate mode counts into it).
struct ThreadAggregateTable {
  AggregateTable* table = static_cast<AggregateTable*>(calloc(1, sizeof(AggregateTable)));
  AggregateTable* saved = t_state.aggregate;
  ThreadAggregateTable() { t_state.aggregate = table; }
  ~ThreadAggregateTable() {
    t_state.aggregate = saved;
    free(table);
  }
};

// A runtime recording in Simple mode into a temporary experiment; stop() ends it and reads the
// process's events back.
struct SimpleModeRecording {
  sigmatrace::test::TempDir dir;
  bool started = false;
  SimpleModeRecording() {
    setenv("SIGMATRACE_OUTPUT", (dir / "exp").c_str(), 1);
    started = start_runtime();
    g_mode = TraceMode::simple;
  }
  void stop(std::vector<sigmatrace::test::ProcessEvents>* procs) {
    stop_runtime();
    std::string error;
    ASSERT_TRUE(sigmatrace::test::read_experiment(dir / "exp", procs, &error)) << error;
    ASSERT_EQ(procs->size(), 1u);
  }
};

class IbverbsPatch : public ::testing::Test {
 protected:
  void SetUp() override {
    g_calls = Calls{};
    g_mode = TraceMode::full;
    g_active.store(true);
  }
};

}  // namespace

TEST_F(IbverbsPatch, ContextOpsAreReplacedAndForwardArgumentsAndResults) {
  FakeDevice dev;
  ASSERT_NE(patch_context(dev.ctx()), nullptr);
  EXPECT_NE(dev.ctx()->ops.post_send, &fake_post_send);
  EXPECT_NE(dev.ctx()->ops.poll_cq, &fake_poll_cq);
  FakeQp qp(dev.ctx(), 7);
  ibv_sge sge{0x1000, 64, 0x11};
  ibv_send_wr wr2{};
  wr2.sg_list = &sge;
  wr2.num_sge = 1;
  ibv_send_wr wr1{};
  wr1.sg_list = &sge;
  wr1.num_sge = 1;
  wr1.opcode = IBV_WR_RDMA_WRITE;
  wr1.next = &wr2;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp.qp(), &wr1, &bad), 0);  // the inline function, through ops
  EXPECT_EQ(g_calls.post_send, 1);
  EXPECT_EQ(g_calls.last_qp, qp.qp());
  EXPECT_EQ(g_calls.last_send_wr, &wr1);
  g_calls.post_send_result = ENOMEM;
  EXPECT_EQ(ibv_post_send(qp.qp(), &wr1, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr2);
  ibv_cq cq{};
  cq.context = dev.ctx();
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(&cq, 4, wc), 2);
  EXPECT_EQ(wc[0].wr_id, 100u);
  EXPECT_EQ(wc[1].status, IBV_WC_REM_ACCESS_ERR);
  ibv_recv_wr rwr{};
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(qp.qp(), &rwr, &rbad), 0);
  EXPECT_EQ(g_calls.post_recv, 1);
  forget_context(dev.ctx());
}

TEST_F(IbverbsPatch, PatchingTheSameContextTwiceNeverTakesTheWrapperForTheRealFunction) {
  FakeDevice dev;
  ContextState* a = patch_context(dev.ctx());
  ContextState* b = patch_context(dev.ctx());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->post_send, &fake_post_send);
  forget_context(dev.ctx());
}

TEST_F(IbverbsPatch, EveryModeForwardsIdentically) {
  for (TraceMode m : {TraceMode::aggregate, TraceMode::simple, TraceMode::full}) {
    g_mode = m;
    FakeDevice dev;
    patch_context(dev.ctx());
    FakeQp qp(dev.ctx(), 9);
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    g_calls.post_send = 0;
    g_calls.post_send_result = 0;
    EXPECT_EQ(ibv_post_send(qp.qp(), &wr, &bad), 0);
    EXPECT_EQ(g_calls.post_send, 1) << mode_name(m);
    forget_context(dev.ctx());
  }
}

TEST_F(IbverbsPatch, QpExWrappersForwardAndAreReappliedAfterTheProviderRewritesThem) {
  FakeDevice dev;
  patch_context(dev.ctx());
  FakeQp qp(dev.ctx(), 21);
  QpState* s = track_qp(qp.qp());
  ASSERT_NE(s, nullptr);
  patch_qp_ex(s, &qp.qpx);
  EXPECT_NE(qp.qpx.wr_rdma_write, &fake_wr_rdma_write);
  EXPECT_NE(qp.qpx.wr_complete, &fake_wr_complete_reset);
  EXPECT_EQ(qp.qpx.wr_send, nullptr);  // unsupported entries stay unsupported
  qp.qpx.wr_id = 77;
  ibv_wr_rdma_write(&qp.qpx, 0xabc, 0x5000);
  ibv_wr_set_sge(&qp.qpx, 0x11, 0x1000, 4096);
  EXPECT_EQ(g_calls.last_rkey, 0xabcu);
  EXPECT_EQ(g_calls.last_raddr, 0x5000u);
  EXPECT_EQ(g_calls.last_length, 4096u);
  EXPECT_EQ(ibv_wr_complete(&qp.qpx), EINVAL);  // the RESET stub's result, untouched
  EXPECT_EQ(g_calls.complete_reset, 1);

  // The provider moves the QP to RTS and installs its real wr_complete over our wrapper.
  qp.qpx.wr_complete = &fake_wr_complete_rts;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  on_qp_modified(qp.qp(), &attr, IBV_QP_STATE);
  EXPECT_NE(qp.qpx.wr_complete, &fake_wr_complete_rts);
  ibv_wr_rdma_write(&qp.qpx, 1, 2);
  ibv_wr_set_sge(&qp.qpx, 3, 4, 5);
  EXPECT_EQ(ibv_wr_complete(&qp.qpx), 0);
  EXPECT_EQ(g_calls.complete_rts, 1);
  EXPECT_EQ(g_calls.complete_reset, 1);
  forget_qp(qp.qp());
  forget_context(dev.ctx());
}

TEST_F(IbverbsPatch, QpEndpointsComeFromThePortLidAndTheRtrAttributes) {
  FakeDevice dev;
  ContextState* c = patch_context(dev.ctx());
  c->lid[1] = 0x12;
  FakeQp qp(dev.ctx(), 0x345);
  QpState* s = track_qp(qp.qp());
  ibv_qp_attr attr{};
  attr.port_num = 1;
  on_qp_modified(qp.qp(), &attr, IBV_QP_PORT);
  EXPECT_EQ(s->local_endpoint, (uint64_t{0x12} << 32) | 0x345);
  attr.ah_attr.dlid = 0x34;
  attr.dest_qp_num = 0x678;
  on_qp_modified(qp.qp(), &attr, IBV_QP_AV | IBV_QP_DEST_QPN);
  EXPECT_EQ(s->remote_endpoint, (uint64_t{0x34} << 32) | 0x678);
  forget_qp(qp.qp());
  EXPECT_EQ(g_qps.find(qp.qp()), nullptr);
  forget_context(dev.ctx());
}

TEST_F(IbverbsPatch, ExtendedCqPollingIsWrappedAndForwarded) {
  ibv_cq_ex cq{};
  cq.start_poll = &fake_start_poll;
  cq.next_poll = &fake_next_poll;
  cq.read_opcode = &fake_read_opcode;
  cq.read_byte_len = &fake_read_u32;
  cq.read_qp_num = &fake_read_u32;
  cq.read_wc_flags = &fake_read_wc_flags;
  cq.read_vendor_err = &fake_read_u32;
  patch_cq_ex(&cq, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM);
  EXPECT_NE(cq.start_poll, &fake_start_poll);
  ibv_poll_cq_attr attr{};
  EXPECT_EQ(ibv_start_poll(&cq, &attr), 0);
  EXPECT_EQ(cq.wr_id, 55u);
  EXPECT_EQ(ibv_next_poll(&cq), ENOENT);
  EXPECT_EQ(g_calls.start_poll, 1);
  EXPECT_EQ(g_calls.next_poll, 1);
  patch_cq_ex(&cq, 0);  // again: still the real functions behind
  EXPECT_EQ(ibv_next_poll(&cq), ENOENT);
  EXPECT_EQ(g_calls.next_poll, 2);
  forget_cq(&cq);
}

TEST_F(IbverbsPatch, MissingRealFunctionFailsWithEnosys) {
  // Nothing in this process provides the real mlx5dv_create_cq (libmlx5 is not loaded): the wrapper
  // (linked into this test) must fail as a library without the function would.
  errno = 0;
  EXPECT_EQ(mlx5dv_create_cq(nullptr, nullptr, nullptr), nullptr);
  EXPECT_EQ(errno, ENOSYS);
}

TEST_F(IbverbsPatch, ResolverHooksReturnWrappersOnlyForExistingDefaultVersionNames) {
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GTEST_SKIP() << "no libibverbs.so.1 on this machine: " << dlerror();
  ASSERT_NE(real_dlsym(), nullptr);
  void* real_open = real_dlsym()(h, "ibv_open_device");
  ASSERT_NE(real_open, nullptr);
  void* hooked = dlsym(h, "ibv_open_device");
  EXPECT_NE(hooked, real_open);                                      // the wrapper
  EXPECT_EQ(hooked, reinterpret_cast<void*>(&ibv_open_device));      // ... this one
  EXPECT_NE(dlvsym(h, "ibv_create_qp", "IBVERBS_1.1"), real_dlvsym()(h, "ibv_create_qp", "IBVERBS_1.1"));
  EXPECT_EQ(dlvsym(h, "ibv_create_qp", "IBVERBS_1.0"), real_dlvsym()(h, "ibv_create_qp", "IBVERBS_1.0"));  // old ABI: untouched
  EXPECT_EQ(dlsym(h, "ibv_no_such_function"), nullptr);
  EXPECT_EQ(dlsym(h, "ibv_get_device_list"), real_dlsym()(h, "ibv_get_device_list"));  // not traced
  EXPECT_NE(dlsym(RTLD_NEXT, "malloc"), nullptr);
  g_active.store(false);  // a provider that is off hands out the real functions
  EXPECT_EQ(dlsym(h, "ibv_alloc_pd"), real_dlsym()(h, "ibv_alloc_pd"));
  g_active.store(true);
  dlclose(h);
}

// Aggregate mode counts per (QP, opcode) and per (local, remote) endpoint pair through a per-thread
// memo that skips the QP lookup; connecting or reconnecting the QP must start the pair counts anew.
TEST_F(IbverbsPatch, AggregateCountsFollowTheQpWhenItIsConnectedAndReconnected) {
  g_mode = TraceMode::aggregate;
  ThreadAggregateTable t;
  ASSERT_NE(t.table, nullptr);
  AggregateTable* table = t.table;
  FakeDevice dev;
  ContextState* c = patch_context(dev.ctx());
  c->lid[1] = 0x12;
  FakeQp qp(dev.ctx(), 0x345);
  track_qp(qp.qp());
  ibv_sge sge{0x1000, 100, 1};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  auto post = [&](int n) {
    for (int i = 0; i < n; ++i) ASSERT_EQ(ibv_post_send(qp.qp(), &wr, &bad), 0);
  };
  auto pair = [&](uint64_t remote) { return table->entry(static_cast<uint64_t>(sigmatrace::format::AggregateKey::ibv_endpoint_pair), (uint64_t{0x12} << 32) | 0x345, remote); };
  post(3);  // not connected yet: no peer
  ibv_qp_attr attr{};
  attr.ah_attr.dlid = 0x34;
  attr.dest_qp_num = 0x678;
  on_qp_modified(qp.qp(), &attr, IBV_QP_AV | IBV_QP_DEST_QPN);
  post(2);
  attr.dest_qp_num = 0x679;  // reconnected (RESET ... RTR) to another QP
  on_qp_modified(qp.qp(), &attr, IBV_QP_AV | IBV_QP_DEST_QPN);
  post(4);
  AggregateEntry* by_opcode = table->entry(static_cast<uint64_t>(sigmatrace::format::AggregateKey::ibv_qp_opcode), 0x345, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(by_opcode->count, 9u);
  EXPECT_EQ(by_opcode->bytes, 900u);
  EXPECT_EQ(pair((uint64_t{0x34} << 32) | 0x678)->count, 2u);
  EXPECT_EQ(pair((uint64_t{0x34} << 32) | 0x679)->count, 4u);
  EXPECT_EQ(pair((uint64_t{0x34} << 32) | 0x679)->bytes, 400u);
  forget_qp(qp.qp());
  forget_context(dev.ctx());
}

// Simple mode records a post before the real call and amends it when the call fails: the event
// must say what was posted (the WRs before bad_wr) and the call's result, as an event recorded
// after the call would.
TEST_F(IbverbsPatch, SimpleModePostsRecordWhatWasPostedAndTheResultEvenWhenTheCallFails) {
  SimpleModeRecording recording;
  ASSERT_TRUE(recording.started);
  FakeDevice dev;
  ASSERT_NE(patch_context(dev.ctx()), nullptr);
  FakeQp qp(dev.ctx(), 0x321);
  ibv_sge sges[4] = {{0x1000, 64, 1}, {0x2000, 128, 1}, {0x3000, 256, 1}, {0x4000, 512, 1}};
  ibv_send_wr w3{}, w2{}, w1{};
  w1.opcode = IBV_WR_RDMA_WRITE, w1.sg_list = &sges[0], w1.num_sge = 1, w1.next = &w2;
  w2.opcode = IBV_WR_SEND, w2.sg_list = &sges[1], w2.num_sge = 2, w2.next = &w3;  // 128 + 256 bytes
  w3.opcode = IBV_WR_RDMA_READ, w3.sg_list = &sges[3], w3.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp.qp(), &w1, &bad), 0);  // a chain: the general path
  EXPECT_EQ(ibv_post_send(qp.qp(), &w3, &bad), 0);  // one WR of one SGE: the common path
  g_calls.post_send_result = ENOMEM;                // fails at w2: only w1 is posted
  EXPECT_EQ(ibv_post_send(qp.qp(), &w1, &bad), ENOMEM);
  EXPECT_EQ(bad, &w2);
  EXPECT_EQ(ibv_post_send(qp.qp(), &w3, &bad), ENOMEM);  // fails at w3 itself: nothing posted
  EXPECT_EQ(bad, &w3);
  EXPECT_EQ(g_calls.post_send, 4);
  forget_qp(qp.qp());
  forget_context(dev.ctx());
  std::vector<sigmatrace::test::ProcessEvents> procs;
  recording.stop(&procs);
  if (HasFatalFailure()) return;
  auto posts = procs[0].of(EventType::ibv_post_send);
  ASSERT_EQ(posts.size(), 4u);
  auto bit = [](int opcode) { return uint64_t{1} << opcode; };
  struct Expected {
    uint64_t n, bytes, mask;
    int64_t ret;
  } expected[4] = {{3, 64 + 384 + 512, bit(IBV_WR_RDMA_WRITE) | bit(IBV_WR_SEND) | bit(IBV_WR_RDMA_READ), 0},
                   {1, 512, bit(IBV_WR_RDMA_READ), 0},
                   {1, 64, bit(IBV_WR_RDMA_WRITE), ENOMEM},
                   {0, 0, 0, ENOMEM}};
  for (size_t i = 0; i < 4; ++i) {
    const auto& e = *posts[i];
    EXPECT_EQ(e[0], 0x321u) << i;
    EXPECT_EQ(e[1], expected[i].n) << i;
    EXPECT_EQ(e[2], expected[i].bytes) << i;
    EXPECT_EQ(e[3], expected[i].mask) << i;
    EXPECT_EQ(static_cast<int64_t>(e[4]), expected[i].ret) << i;
  }
  auto errors = procs[0].of(EventType::ibv_call_error);
  ASSERT_EQ(errors.size(), 2u);
  for (const auto* e : errors) {
    EXPECT_EQ((*e)[0], static_cast<uint64_t>(IbvCall::post_send));
    EXPECT_EQ((*e)[1], 0x321u);
    EXPECT_EQ(static_cast<int64_t>((*e)[2]), ENOMEM);
  }
}

// Simple mode records a post, or an ibv_wr_* batch, inline when the thread's chunk has room and
// out of line when it must take the next one: over many chunks, and with calls that fail on
// both paths, every call is one event with what was posted and the call's result.
TEST_F(IbverbsPatch, SimpleModePostsAndBatchesAreRecordedExactlyAcrossChunksAndFailures) {
  setenv("SIGMATRACE_CHUNK_KB", "4", 1);  // 73 post events a chunk
  SimpleModeRecording recording;
  unsetenv("SIGMATRACE_CHUNK_KB");
  ASSERT_TRUE(recording.started);
  constexpr int kCalls = 1000;
  auto fails = [](int i) { return i % 7 == 3; };
  {
    FakeBuilderQp qp(0x458);
    ibv_sge sge{0x1000, 0, 1};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND, wr.sg_list = &sge, wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    for (int i = 0; i < kCalls; ++i) {
      sge.length = static_cast<uint32_t>(i);
      g_calls.post_send_result = fails(i) ? ENOMEM : 0;
      EXPECT_EQ(ibv_post_send(qp.fake.qp(), &wr, &bad), g_calls.post_send_result);
      g_calls.complete_result = fails(i) ? EINVAL : 0;
      ibv_wr_start(&qp.qpx);
      ibv_wr_rdma_write(&qp.qpx, 1, 0x9000), ibv_wr_set_sge(&qp.qpx, 1, 0x1000, static_cast<uint32_t>(2 * i));
      EXPECT_EQ(ibv_wr_complete(&qp.qpx), g_calls.complete_result);
    }
  }
  std::vector<sigmatrace::test::ProcessEvents> procs;
  recording.stop(&procs);
  if (HasFatalFailure()) return;
  auto posts = procs[0].of(EventType::ibv_post_send);
  ASSERT_EQ(posts.size(), 2u * kCalls);
  int failed = 0;
  for (int i = 0; i < kCalls; ++i) {
    const auto& by_post_send = *posts[2 * i];
    const auto& by_batch = *posts[2 * i + 1];
    EXPECT_EQ(by_post_send[0], 0x458u) << i;
    EXPECT_EQ(by_post_send[1], fails(i) ? 0u : 1u) << i;  // the WR is bad_wr: nothing was posted
    EXPECT_EQ(by_post_send[2], fails(i) ? 0u : static_cast<uint64_t>(i)) << i;
    EXPECT_EQ(static_cast<int64_t>(by_post_send[4]), fails(i) ? ENOMEM : 0) << i;
    EXPECT_EQ(by_batch[0], 0x458u) << i;
    EXPECT_EQ(by_batch[1], 1u) << i;
    EXPECT_EQ(by_batch[2], static_cast<uint64_t>(2 * i)) << i;
    EXPECT_EQ(by_batch[3], uint64_t{1} << IBV_WR_RDMA_WRITE) << i;
    EXPECT_EQ(static_cast<int64_t>(by_batch[4]), fails(i) ? EINVAL : 0) << i;
    failed += fails(i);
  }
  EXPECT_EQ(procs[0].of(EventType::ibv_call_error).size(), 2u * failed);
}

// A second provider library, for a process with devices of two kinds: its own post_send.
int g_other_provider_posts = 0;
int other_provider_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad) {
  ++g_other_provider_posts;
  *bad = wr;
  return EAGAIN;
}

// With contexts of two providers the wrappers cannot call one real function for all: Simple mode's
// common post then finds its context's own, and a failure there is amended as on the fast path.
TEST_F(IbverbsPatch, SimpleModePostsReachEachProvidersOwnFunctionWhenTwoAreLoaded) {
  SimpleModeRecording recording;
  ASSERT_TRUE(recording.started);
  FakeDevice dev, other;
  other.vctx.context.ops.post_send = &other_provider_post_send;
  ASSERT_NE(patch_context(dev.ctx()), nullptr);
  ASSERT_NE(patch_context(other.ctx()), nullptr);
  FakeQp qp(dev.ctx(), 0x41), other_qp(other.ctx(), 0x42);
  ibv_sge sge{0x1000, 64, 1};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_RDMA_WRITE, wr.sg_list = &sge, wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp.qp(), &wr, &bad), 0);
  EXPECT_EQ(ibv_post_send(other_qp.qp(), &wr, &bad), EAGAIN);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(g_calls.post_send, 1);
  EXPECT_EQ(g_other_provider_posts, 1);
  forget_qp(qp.qp());
  forget_qp(other_qp.qp());
  forget_context(dev.ctx());
  forget_context(other.ctx());
  std::vector<sigmatrace::test::ProcessEvents> procs;
  recording.stop(&procs);
  if (HasFatalFailure()) return;
  auto posts = procs[0].of(EventType::ibv_post_send);
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ((*posts[0])[0], 0x41u);
  EXPECT_EQ((*posts[0])[1], 1u);
  EXPECT_EQ((*posts[0])[2], 64u);
  EXPECT_EQ((*posts[0])[4], 0u);
  EXPECT_EQ((*posts[1])[0], 0x42u);
  EXPECT_EQ((*posts[1])[1], 0u);  // nothing was posted
  EXPECT_EQ((*posts[1])[2], 0u);
  EXPECT_EQ(static_cast<int64_t>((*posts[1])[4]), EAGAIN);
  auto errors = procs[0].of(EventType::ibv_call_error);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ((*errors[0])[1], 0x42u);
}

// Aggregate mode counts an ibv_wr_* batch per opcode at wr_complete (its setters only note the
// opcode and the bytes): mixed opcodes, every data setter and an aborted batch in between.
TEST_F(IbverbsPatch, WrBatchesAreCountedPerOpcodeInAggregateMode) {
  g_mode = TraceMode::aggregate;
  ThreadAggregateTable t;
  ASSERT_NE(t.table, nullptr);
  AggregateTable* table = t.table;
  FakeBuilderQp qp(0x456);
  qp.post_batches();
  auto count = [&](int opcode) {
    AggregateEntry* e = table->entry(static_cast<uint64_t>(sigmatrace::format::AggregateKey::ibv_qp_opcode), 0x456, opcode);
    return std::pair<uint64_t, uint64_t>{e->count, e->bytes};
  };
  EXPECT_EQ(count(IBV_WR_RDMA_WRITE), std::make_pair(uint64_t{2}, uint64_t{108}));
  EXPECT_EQ(count(IBV_WR_SEND), std::make_pair(uint64_t{2}, uint64_t{77}));
  EXPECT_EQ(count(IBV_WR_RDMA_READ), std::make_pair(uint64_t{1}, uint64_t{1000}));
  EXPECT_EQ(g_calls.complete_rts, 2);
  EXPECT_EQ(table->overflow, 0u);
}

// Simple mode records each completed batch as one post: its WRs, bytes and opcodes.
TEST_F(IbverbsPatch, WrBatchesAreRecordedAsOnePostInSimpleMode) {
  SimpleModeRecording recording;
  ASSERT_TRUE(recording.started);
  {
    FakeBuilderQp qp(0x457);
    qp.post_batches();
  }
  std::vector<sigmatrace::test::ProcessEvents> procs;
  recording.stop(&procs);
  if (HasFatalFailure()) return;
  auto posts = procs[0].of(EventType::ibv_post_send);
  ASSERT_EQ(posts.size(), 2u);
  auto bit = [](int opcode) { return uint64_t{1} << opcode; };
  EXPECT_EQ((*posts[0])[0], 0x457u);
  EXPECT_EQ((*posts[0])[1], 4u);
  EXPECT_EQ((*posts[0])[2], 100u + 70u + 8u + 1000u);
  EXPECT_EQ((*posts[0])[3], bit(IBV_WR_RDMA_WRITE) | bit(IBV_WR_SEND) | bit(IBV_WR_RDMA_READ));
  EXPECT_EQ((*posts[1])[1], 1u);
  EXPECT_EQ((*posts[1])[2], 7u);
  EXPECT_EQ((*posts[1])[3], bit(IBV_WR_SEND));
  EXPECT_EQ(static_cast<int64_t>((*posts[1])[4]), 0);
}
